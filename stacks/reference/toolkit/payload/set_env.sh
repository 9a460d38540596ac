# Environment of the CPU-simulated CANN toolkit (stackbuild's reference stack; not Huawei CANN).
# It behaves as CANN 8.5.0's set_env.sh does (hicann/runtime scripts/package/runtime/set_env.sh at
# v8.5.0): the install rewrites the toolkit_dir= line below to the installed directory; the
# toolkit's earlier entries are dropped from the path variables before its own are put in front;
# devlib/ (a stand-in of the driver's HAL) goes last on LD_LIBRARY_PATH only when no driver is
# found; the compiler is reachable only through PATH and the CMake packages only through
# CMAKE_PREFIX_PATH.

_cpusim_prepend() { # NAME VALUE: VALUE in front of $NAME (or alone)
    local current
    current=$(eval "printf '%s' \"\${$1-}\"")
    if [ -n "$current" ]; then export "$1=$2:$current"; else export "$1=$2"; fi
}

_cpusim_drop() { # NAME REGEX: the entries of $NAME matching REGEX removed
    local current kept
    current=$(eval "printf '%s' \"\${$1-}\"")
    kept=$(printf '%s\n' "$current" | tr ':' '\n' | grep -v -E -- "$2" | paste -sd: -)
    export "$1=$kept"
}

_cpusim_set_env() {
    local toolkit_dir="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
    local hal=libascend_hal.so driver=n dir info_dir
    _cpusim_drop PATH "^${toolkit_dir}/"
    _cpusim_drop LD_LIBRARY_PATH "^${toolkit_dir}/"
    _cpusim_drop PYTHONPATH "^${toolkit_dir}/"

    # A driver is there when its HAL is: in a driver directory on LD_LIBRARY_PATH, under the path
    # /etc/ascend_install.info names, or known to ldconfig.
    for dir in $(printf '%s' "${LD_LIBRARY_PATH-}" | tr ':' ' '); do
        case "$dir" in *driver*) [ -n "$(find "$dir" -name "$hal" 2>/dev/null)" ] && driver=y ;; esac
    done
    if [ -f /etc/ascend_install.info ]; then
        info_dir=$(grep -iw driver_install_path_param /etc/ascend_install.info | cut -s -d= -f2-)
        [ -n "$info_dir" ] && [ -n "$(find "$info_dir/driver" -name "$hal" 2>/dev/null)" ] && driver=y
    fi
    case ":${PATH-}:" in *:/sbin:*) ;; *) export PATH="${PATH-}:/sbin" ;; esac
    if command -v ldconfig >/dev/null && ldconfig -p | grep -q -- "$hal"; then driver=y; fi

    _cpusim_prepend PATH "$toolkit_dir/bin:$toolkit_dir/tools/ccec_compiler/bin"
    _cpusim_prepend LD_LIBRARY_PATH "$toolkit_dir/lib64:/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver"
    # As CANN's does: a colon even when PYTHONPATH was empty.
    export PYTHONPATH="$toolkit_dir/python/site-packages:${PYTHONPATH-}"
    if [ "$driver" = n ]; then
        export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$toolkit_dir/devlib"
    fi
    export ASCEND_TOOLKIT_HOME="$toolkit_dir"
    export ASCEND_HOME_PATH="$toolkit_dir"
    export ASCEND_OPP_PATH="$toolkit_dir/opp"
    export ASCEND_AICPU_PATH="$toolkit_dir"
    export TOOLCHAIN_HOME="$toolkit_dir/toolkit"
    _cpusim_prepend CMAKE_PREFIX_PATH "$toolkit_dir/lib64/cmake"
}

_cpusim_set_env
unset -f _cpusim_prepend _cpusim_drop _cpusim_set_env
