bash build_out/cann-asc-devkit_*_linux-"$(uname -m)".run --full --quiet --install-for-all --install-path=/usr/local/Ascend
