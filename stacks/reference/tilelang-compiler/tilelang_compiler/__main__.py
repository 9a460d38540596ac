import sys

from tilelang_compiler.cli import main

sys.exit(main())
