import sys

from tests.conftest import REFERENCE

# The DSL and compiler are tested in-process from their source folders.
for package_dir in ("tilelang", "tilelang-compiler"):
    path = str(REFERENCE / package_dir)
    if path not in sys.path:
        sys.path.insert(0, path)
