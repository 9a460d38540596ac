bash build_out/cann-asc-devkit_*_linux-"$(uname -m)".run --full --quiet --install-path=/usr/local/Ascend
