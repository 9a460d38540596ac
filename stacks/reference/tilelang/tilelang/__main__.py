"""python -m tilelang FILE.tl: print the IR as JSON, or the error with its line and column."""

import argparse
import json
import sys

from tilelang.parser import TileLangError, parse_file


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tilelang", description="Parse a TileLang kernel into JSON IR.")
    parser.add_argument("file")
    args = parser.parse_args()
    try:
        ir = parse_file(args.file)
    except (TileLangError, OSError) as err:
        print(err, file=sys.stderr)
        return 1
    print(json.dumps(ir, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
