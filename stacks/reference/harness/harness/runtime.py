"""ctypes binding of libascend_runtime.so, located by ASCEND_RUNTIME_LIB."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

ACL_ERRORS = {
    100000: "ACL_ERROR_INVALID_PARAM",
    100001: "ACL_ERROR_UNINITIALIZE",
    100002: "ACL_ERROR_REPEAT_INITIALIZE",
    100003: "ACL_ERROR_INVALID_FILE",
    100006: "ACL_ERROR_PARSE_FILE",
    107000: "ACL_ERROR_RT_PARAM_INVALID",
    107001: "ACL_ERROR_RT_INVALID_DEVICEID",
    107002: "ACL_ERROR_RT_CONTEXT_NULL",
    200000: "ACL_ERROR_BAD_ALLOC",
    500001: "ACL_ERROR_FAILURE",
}


class RuntimeNotFound(Exception):
    pass


class AclError(Exception):
    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(f"{ACL_ERRORS.get(code, 'ACL error')} ({code}): {message}")


class _Value(ctypes.Union):
    _fields_ = [("ptr", ctypes.c_void_p), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


class _Arg(ctypes.Structure):
    _fields_ = [("type", ctypes.c_char_p), ("value", _Value)]


class Runtime:
    def __init__(self, path: str | None = None) -> None:
        path = path or os.environ.get("ASCEND_RUNTIME_LIB")
        if not path:
            raise RuntimeNotFound("ASCEND_RUNTIME_LIB is not set: point it at libascend_runtime.so")
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as err:
            raise RuntimeNotFound(f"cannot load the runtime {path}: {err}") from err
        self.lib.ascend_runtime_last_error.restype = ctypes.c_char_p
        self.lib.ascend_malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.ascend_free.argtypes = [ctypes.c_void_p]
        for name in ("ascend_memcpy_to_device", "ascend_memcpy_to_host"):
            getattr(self.lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.launch_kernel.argtypes = [
            ctypes.c_char_p,
            ctypes.c_uint32 * 3,
            ctypes.c_uint32 * 3,
            ctypes.c_size_t,
            ctypes.POINTER(_Arg),
            ctypes.c_size_t,
        ]

    def _check(self, code: int) -> None:
        if code != 0:
            raise AclError(code, (self.lib.ascend_runtime_last_error() or b"").decode())

    def malloc(self, size: int) -> int:
        ptr = ctypes.c_void_p()
        self._check(self.lib.ascend_malloc(ctypes.byref(ptr), size))
        return int(ptr.value or 0)

    def free(self, ptr: int) -> None:
        self._check(self.lib.ascend_free(ptr))

    def to_device(self, dst: int, src: int, size: int) -> None:
        self._check(self.lib.ascend_memcpy_to_device(dst, src, size))

    def to_host(self, dst: int, src: int, size: int) -> None:
        self._check(self.lib.ascend_memcpy_to_host(dst, src, size))

    def launch(
        self,
        path: str,
        grid: Sequence[int],
        block: Sequence[int],
        shared_mem: int,
        args: Sequence[tuple[str, int | float]],
    ) -> None:
        """Launch; args are (signature type, value) pairs, pointers as device addresses."""
        packed = (_Arg * max(len(args), 1))()
        for slot, (kind, value) in zip(packed, args, strict=False):
            slot.type = kind.encode()
            if kind.endswith("*"):
                slot.value.ptr = int(value)
            elif kind.startswith("float"):
                slot.value.f = float(value)
            else:
                slot.value.i = int(value)
        dims = ctypes.c_uint32 * 3
        self._check(self.lib.launch_kernel(path.encode(), dims(*grid), dims(*block), shared_mem, packed, len(args)))
