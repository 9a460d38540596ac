mkdir -p third_party/llvm-15 && tar -xzf third_party/pkg/llvm-project-llvmorg-15.0.4.tar.gz --strip-components=1 -C third_party/llvm-15
