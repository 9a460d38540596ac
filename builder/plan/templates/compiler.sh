#!/bin/sh
# stackbuild: a compiler a component's build calls by name (its build.sh puts this directory first
# on PATH). It runs the compiler of that name found after this directory: through the compile cache
# when the build mounts it (builder/plan/compile_cache.py), else directly. It is the same file either
# way, so what a build system records of its compiler (CMake's CMakeCache.txt) is too.
name=${0##*/}
set -f
real=
IFS=:
for dir in $PATH; do
    [ -n "$dir" ] && [ "$dir" != /opt/stackbuild/compilers ] || continue
    if [ -f "$dir/$name" ] && [ -x "$dir/$name" ]; then real=$dir/$name; break; fi
done
unset IFS
[ -n "$real" ] || { echo "$name: command not found" >&2; exit 127; }
[ -x /mnt/stackbuild-compile-cache ] && exec /mnt/stackbuild-compile-cache "$real" "$@"
exec "$real" "$@"
