# stackbuild: prints the environment before and after sourcing the environment scripts (the
# release's, then the components'), in a bash that has the image's ENV and nothing else (run as:
# bash --noprofile --norc -c THIS), each entry under /usr/local/Ascend/ taken out first (a base that has
# them already, as the official images do, would get them twice); the set-env probe starts from the
# same environment.
eval "$(python3 -c '
import os, shlex, sys
root = sys.argv[1]
for name, value in sorted(os.environ.items()):
    entries = [e for e in value.split(":") if not (e == root.rstrip("/") or e.startswith(root))]
    print(f"export {name}={shlex.quote(chr(58).join(entries))}" if any(entries) else f"unset {name}")
' /usr/local/Ascend/)" || exit 1
dump() { python3 -c 'import json, os, sys; print(sys.argv[1], json.dumps(dict(os.environ), sort_keys=True))' "$1"; }
dump stackbuild-env-before
source /usr/local/Ascend/cann/set_env.sh || exit 1
if [ -f /usr/local/Ascend/cann-8.5.0/share/info/ascendnpu-ir/bin/set_env.sh ]; then source /usr/local/Ascend/cann-8.5.0/share/info/ascendnpu-ir/bin/set_env.sh || exit 1; fi
if [ -f /usr/local/Ascend/nnal/atb/set_env.sh ]; then source /usr/local/Ascend/nnal/atb/set_env.sh || exit 1; fi
dump stackbuild-env-after
