bash build.sh --pkg --cann_3rd_lib_path="$PWD/third_party"
