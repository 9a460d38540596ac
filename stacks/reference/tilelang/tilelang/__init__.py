"""TileLang seed DSL of the reference stack: parse a .tl kernel into a JSON IR."""

from tilelang.parser import IR_VERSION, TileLangError, parse, parse_file

__all__ = ["IR_VERSION", "TileLangError", "parse", "parse_file"]
__version__ = "0.1.0"
