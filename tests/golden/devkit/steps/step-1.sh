bash build.sh --pkg
