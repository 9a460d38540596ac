"""Lockfiles: the versioned model, reading/writing with migrations, resolving and checking."""

from builder.lock.io import lock_path, read, write
from builder.lock.model import LOCK_VERSION, Lock

__all__ = ["LOCK_VERSION", "Lock", "lock_path", "read", "write"]
