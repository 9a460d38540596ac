"""stackbuild: reproducible container builds of the Ascend NPU software stack."""

__version__ = "0.1.0"
