# stackbuild: base (runtime), a root filesystem pulled as ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508.
FROM ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508
# What this stage's own layers are normalised to (the pinned image's stay as pulled).
ARG SOURCE_DATE_EPOCH=1704067200
# The engine mounts its own /etc/hosts over this one in every build step and container; with a file
# here it need not make one, so a step that writes nothing in /etc leaves /etc as it was and its
# layer can be canonical as the engine wrote it (the toolkit's install steps are).
COPY ["etc-hosts", "/etc/hosts"]
