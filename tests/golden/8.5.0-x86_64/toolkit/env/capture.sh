# stackbuild: prints the environment before and after sourcing the release's environment scripts, in
# a clean bash whose PATH is the image's own (run as: env -i PATH="$PATH" bash -c THIS).
dump() { python3 -c 'import json, os, sys; print(sys.argv[1], json.dumps(dict(os.environ), sort_keys=True))' "$1"; }
dump stackbuild-env-before
source /usr/local/Ascend/cann/set_env.sh || exit 1
if [ -f /usr/local/Ascend/cann-8.5.0/share/info/ascendnpu-ir/bin/set_env.sh ]; then source /usr/local/Ascend/cann-8.5.0/share/info/ascendnpu-ir/bin/set_env.sh || exit 1; fi
if [ -f /usr/local/Ascend/nnal/atb/set_env.sh ]; then source /usr/local/Ascend/nnal/atb/set_env.sh || exit 1; fi
dump stackbuild-env-after
