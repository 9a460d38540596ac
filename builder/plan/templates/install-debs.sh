#!/bin/bash
# stackbuild: installs the lock's .debs beside this file, with no network and no package index.
# locked.txt lists them, one a line: sha256, file, package, version, architecture. Each file is checked against
# its locked sha256 first, so a file with other bytes (another version, say) is refused. apt then
# orders the install over these files alone (no sources, an empty list directory): a Pre-Depends
# unpacked and configured before what needs it, triggers run, nothing removed. A failure ends with
# apt's and dpkg's own reason lines, marked, which become the stage's headline.
set -uo pipefail
here=$(dirname -- "$(readlink -f -- "$0")")
files=()
while read -r sha256 file package version arch || [ -n "${sha256-}" ]; do
    found=$(sha256sum <"$here/$file" | cut -d' ' -f1)
    if [ "$found" != "$sha256" ]; then
        held=$(dpkg-deb --show --showformat='${Package} ${Version}' -- "$here/$file" 2>/dev/null) || held="no package"
        echo "stackbuild: cannot install system package $package: $file holds $held, not the locked" \
            "$package $version (sha256 ${found:0:12}, locked ${sha256:0:12})" >&2
        exit 1
    fi
    files+=("$here/$file")
done <"$here/locked.txt"
[ "${#files[@]}" -gt 0 ] || { echo "stackbuild: cannot install system packages: $here/locked.txt lists none" >&2; exit 1; }
if ! command -v apt-get >/dev/null; then
    echo "stackbuild: cannot install system packages: the base has no apt-get (a Debian or Ubuntu base has it)" >&2
    exit 1
fi
lists=$(mktemp -d) && mkdir -p "$lists/partial" && log=$(mktemp) || exit 1
LC_ALL=C DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends --no-remove \
    -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$lists" \
    -o APT::Sandbox::User=root -o Dpkg::Use-Pty=0 -- "${files[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo "stackbuild: system packages: apt-get exited with $status; apt's and dpkg's reasons:" >&2
    grep -E -A2 '^dpkg: (error|dependency problems|regarding)|^E: |^ [^ ]+ : ' "$log" \
        | grep -v -e '^--$' -e '^$' -e '^dpkg: warning' | head -n 12 | sed 's/^/stackbuild: | /' >&2
    exit "$status"
fi
# apt had only these files to choose from: each package is now installed at its locked version.
while read -r sha256 file package version arch || [ -n "${sha256-}" ]; do
    state=$(LC_ALL=C dpkg-query --show --showformat='${db:Status-Status} ${Version}' -- "$package:$arch" 2>/dev/null)
    if [ "$state" != "installed $version" ]; then
        echo "stackbuild: cannot install system package $package: dpkg has it as '${state:-not installed}'," \
            "not installed at the locked $version" >&2
        exit 1
    fi
done <"$here/locked.txt"
rm -rf -- "$here" "$lists" "$log"
