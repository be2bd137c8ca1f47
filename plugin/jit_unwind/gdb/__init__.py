"""The GDB adapter: the only package (with ``gdb_init.py``) that imports ``gdb``."""

from .install import install

__all__ = ["install"]
