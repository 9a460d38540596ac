mkdir -p third_party/json && cmake -E chdir third_party/json cmake -E tar xf ../pkg/include.zip --format=zip
