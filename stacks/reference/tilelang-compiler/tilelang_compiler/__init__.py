"""TileLang compiler of the reference stack: TileLang IR + a target description -> Ascend C."""

from tilelang_compiler.codegen import CompileError, compile_file, load_target

__all__ = ["CompileError", "compile_file", "load_target"]
__version__ = "0.1.0"
