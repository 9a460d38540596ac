# The classic linear peer of bench/build_bench.py: one hand-written multi-stage Dockerfile
# doing the same builds as stackbuild's reference stack, on the same base image, built
# with the classic `docker build` and its own layer cache. Each stage starts from the previous
# one, as such files are usually written. The Ascend C devkit installs with the toolkit (inside
# its package, as CANN ships asc-devkit); the layers above find it from ASCEND_HOME_PATH.
ARG BASE
FROM ${BASE} AS toolkit
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY dist/ /tmp/dist/
RUN bash /tmp/dist/cpusim-cann-toolkit_8.5.0_linux-x86_64.run --full --quiet --install-for-all && rm -rf /tmp/dist
# bench: the toolkit's environment (what its set_env.sh sets, written in as ENV by the bench)

FROM toolkit AS tilelang
COPY reference/tilelang /opt/stack/tilelang
WORKDIR /opt/stack/tilelang
RUN python3 -m pip install --quiet --no-cache-dir --no-deps --no-build-isolation --no-index --target python .
ENV PYTHONPATH=/opt/stack/tilelang/python

FROM tilelang AS tilelang-compiler
COPY reference/tilelang-compiler /opt/stack/tilelang-compiler
WORKDIR /opt/stack/tilelang-compiler
RUN python3 -m pip install --quiet --no-cache-dir --no-deps --no-build-isolation --no-index --target python .
ENV PYTHONPATH=/opt/stack/tilelang-compiler/python:/opt/stack/tilelang/python \
    PATH=/opt/stack/tilelang-compiler/python/bin:${PATH}

FROM tilelang-compiler AS ascend-kernel
COPY reference/ascend-kernel /opt/stack/ascend-kernel
WORKDIR /opt/stack/ascend-kernel
RUN make

FROM ascend-kernel AS runtime
COPY reference/runtime /opt/stack/runtime
WORKDIR /opt/stack/runtime
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build
ENV ASCEND_RUNTIME_LIB=/opt/stack/runtime/build/libascend_runtime.so

FROM runtime AS harness
COPY reference/harness /opt/stack/harness
WORKDIR /opt/stack/harness
RUN python3 -m pip install --quiet --no-cache-dir --no-deps --no-build-isolation --no-index --target python .
ENV PYTHONPATH=/opt/stack/harness/python:/opt/stack/tilelang-compiler/python:/opt/stack/tilelang/python
WORKDIR /opt/stack
