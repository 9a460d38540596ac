bash scripts/build.sh 00_basic_matmul
