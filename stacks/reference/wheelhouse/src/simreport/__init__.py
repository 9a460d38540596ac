"""Throughput report of a matmul launch: the reference harness's one third-party dependency,
installed from the reference wheelhouse (stacks/reference/wheelhouse) by pinned hash."""

__version__ = "1.0"


def gflops(m: int, n: int, k: int, elapsed_ms: float) -> float:
    """GFLOP/s of an m x k by k x n matmul (2*m*n*k operations) that took elapsed_ms."""
    return 2.0 * m * n * k / (max(elapsed_ms, 1e-6) * 1e6)


def throughput_line(m: int, n: int, k: int, elapsed_ms: float) -> str:
    return f"[INFO] Throughput: {gflops(m, n, k, elapsed_ms):.2f} GFLOP/s (simreport {__version__})"
