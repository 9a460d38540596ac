# stackbuild: base (runtime), a root filesystem bootstrapped with mmdebstrap (jammy, apt).
FROM scratch
ADD rootfs.tar /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
CMD ["/bin/bash"]
# The engine mounts its own /etc/hosts over this one in every build step and container; with a file
# here it need not make one, so a step that writes nothing in /etc leaves /etc as it was and its
# layer can be canonical as the engine wrote it (the toolkit's install steps are).
COPY ["etc-hosts", "/etc/hosts"]
# System packages: the lock's .debs (the whole dependency closure), installed from the context by
# apt in its own order, with no network and no package index; debs/install.sh checks each against
# its locked sha256 first and ends a failure with apt's and dpkg's reasons.
COPY ["debs/", "/tmp/stackbuild-debs/"]
RUN ["/bin/bash", "/tmp/stackbuild-debs/install.sh"]
