"""Test harness of the reference stack: launches kernels through the Ascend runtime."""

__version__ = "0.1.0"
