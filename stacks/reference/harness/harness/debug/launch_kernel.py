"""Launch the matmul kernel on random inputs and check it against a reference.

python -m harness.debug.launch_kernel --kernel-path build/libascend_kernel.so \
    --grid-dim 1,1,1 --block-dim 16,16,1 --shared-mem 0 --args float32,M,N,K,lda,ldb,ldc

--args is the element type of the three matrices, then the kernel's scalar arguments,
each a number or one of M, N, K, lda, ldb, ldc (taken from --m/--n/--k, row-major).
Exits 0 on success, 1 on a launch failure or a result off by more than --tolerance.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from simreport import throughput_line

from harness.runtime import AclError, Runtime, RuntimeNotFound

DTYPES = {"float32": np.float32}


def dims(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.split(",")]
    if len(parts) != 3 or min(parts) < 0:
        raise argparse.ArgumentTypeError(f"expected three non-negative integers like 1,1,1, got '{text}'")
    return parts[0], parts[1], parts[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.debug.launch_kernel",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kernel-path", required=True)
    parser.add_argument("--grid-dim", type=dims, default=(1, 1, 1))
    parser.add_argument("--block-dim", type=dims, default=(16, 16, 1))
    parser.add_argument("--shared-mem", type=int, default=0)
    parser.add_argument("--args", default="float32,M,N,K,lda,ldb,ldc")
    parser.add_argument("--m", type=int, default=256)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--k", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-3)
    opts = parser.parse_args(argv)

    dtype_name, *scalars = opts.args.split(",")
    if dtype_name not in DTYPES:
        parser.error(f"--args: unknown element type '{dtype_name}' (known: {', '.join(DTYPES)})")
    m, n, k = opts.m, opts.n, opts.k
    symbols = {"M": m, "N": n, "K": k, "lda": k, "ldb": n, "ldc": n}
    values = []
    for token in scalars:
        if token in symbols:
            values.append(symbols[token])
        elif token.lstrip("-").isdigit():
            values.append(int(token))
        else:
            parser.error(f"--args: '{token}' is neither a number nor one of {', '.join(symbols)}")

    rng = np.random.default_rng(opts.seed)
    dtype = DTYPES[dtype_name]
    a = rng.uniform(-1, 1, (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(dtype)
    c = np.zeros((m, n), dtype)
    try:
        rt = Runtime()
        buffers = [rt.malloc(x.nbytes) for x in (a, b, c)]
        for buf, x in zip(buffers, (a, b), strict=False):
            rt.to_device(buf, x.ctypes.data, x.nbytes)
        args = [(f"{dtype_name}*", buf) for buf in buffers] + [("int32", v) for v in values]
        start = time.perf_counter()
        rt.launch(opts.kernel_path, opts.grid_dim, opts.block_dim, opts.shared_mem, args)
        elapsed_ms = (time.perf_counter() - start) * 1000
        rt.to_host(c.ctypes.data, buffers[2], c.nbytes)
        for buf in buffers:
            rt.free(buf)
    except (RuntimeNotFound, AclError) as err:
        print(f"[ERROR] Kernel launch failed: {err}", file=sys.stderr)
        return 1
    print(f"[INFO] Kernel launch success! Elapsed time: {elapsed_ms:.3f} ms")
    expected = a.astype(np.float64) @ b.astype(np.float64)
    max_error = float(np.max(np.abs(c - expected))) if c.size else 0.0
    print(f"[INFO] Max error: {max_error:.3e} (M={m} N={n} K={k}, tolerance {opts.tolerance:g})")
    print(throughput_line(m, n, k, elapsed_ms))
    if not max_error <= opts.tolerance:
        print(f"[ERROR] Result mismatch: max error {max_error:.3e} > {opts.tolerance:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
