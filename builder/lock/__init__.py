"""Lockfiles: the versioned model, reading/writing with migrations, resolving and checking."""

from builder.lock.io import read, write
from builder.lock.locked import LOCK_VERSION, Lock

__all__ = ["LOCK_VERSION", "Lock", "read", "write"]
