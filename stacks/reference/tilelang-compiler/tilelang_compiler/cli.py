"""tilelang-compiler -i KERNEL.tl -o KERNEL.ac [--target 910b]"""

from __future__ import annotations

import argparse
import sys

from tilelang_compiler.codegen import CompileError, compile_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tilelang-compiler",
        description="Compile a TileLang kernel to Ascend C (reference stack, CPU simulation). "
        "Needs the Ascend C headers: $ASCEND_HOME_PATH/ascendc/include (the toolkit's set_env.sh sets "
        "ASCEND_HOME_PATH), or ASCEND_C_INCLUDE pointing elsewhere.",
    )
    parser.add_argument("-i", "--input", required=True, help="TileLang source (.tl)")
    parser.add_argument("-o", "--output", required=True, help="Ascend C output (.ac)")
    parser.add_argument("--target", default="910b", help="hardware description (default %(default)s)")
    parser.add_argument("--kernel-name", help="kernel symbol (default: output file stem)")
    parser.add_argument("--dtype", default="float32", help="element type (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        out = compile_file(args.input, args.output, args.target, args.kernel_name, args.dtype)
    except (CompileError, OSError) as err:
        print(f"tilelang-compiler: error: {err}", file=sys.stderr)
        return 1
    print(f"tilelang-compiler: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
