# stackbuild: base (runtime), a root filesystem pulled as ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508.
FROM ubuntu@sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508
# What this stage's own layers are normalised to (the pinned image's stay as pulled).
ARG SOURCE_DATE_EPOCH=1704067200
