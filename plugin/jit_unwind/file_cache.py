"""Values read from files, kept while the file at a path stays the same one.

Every per-file cache of the plugin keys its entries the same way: by path, checked
against the file's identity (device, inode, size, mtime in ns), which tells a file
rebuilt or replaced at that path (a second core file loaded in one session maps other
builds; a perf map grows) from the one read before."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
import struct
from typing import Callable, Dict, Generic, Optional, Tuple, TypeVar

Value = TypeVar("Value")
Identity = Tuple[int, int, int, int]

# What reading a file that may be truncated, corrupted or of another format raises: the
# file system's errors, a check or a decoding that fails (ValueError, UnicodeDecodeError
# among them; the readers' "not ELF", a section that does not inflate), struct on bytes
# cut short, an offset or index past a table's end, a seek or a size past what a C long
# holds (OverflowError).
FILE_ERRORS = (OSError, EOFError, ValueError, OverflowError, IndexError, KeyError,
               struct.error)


def file_identity(path: str) -> Optional[Identity]:
    """(device, inode, size, mtime in ns) of ``path``, None when it cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


class FileCache(Generic[Value]):
    """``compute(path)`` once per file, at most ``limit`` files (then it starts over:
    a session rarely reads more, and the bound keeps a long session's memory flat)."""

    def __init__(self, limit: int = 256):
        self.limit = limit
        self._entries: Dict[str, Tuple[Identity, Value]] = {}

    def __len__(self) -> int:
        """How many files it holds now."""
        return len(self._entries)

    def get(self, path: str, compute: Callable[[str], Value], failed: Value) -> Value:
        """The value for the file now at ``path``; ``failed`` for a file that is gone,
        and (kept until the file changes) for one ``compute`` cannot read: not ELF, a
        table we cannot parse, garbage (``compute`` raises one of FILE_ERRORS)."""
        identity = file_identity(path)
        if identity is None:
            return failed
        cached = self._entries.get(path)
        if cached is not None and cached[0] == identity:
            return cached[1]
        if len(self._entries) >= self.limit:
            self._entries.clear()
        try:
            value = compute(path)
        except FILE_ERRORS:  # a file we cannot read is normal
            value = failed
        self._entries[path] = (identity, value)
        return value

    def peek(self, path: str) -> Optional[Value]:
        """What is kept for the file now at ``path``, None when nothing is."""
        cached = self._entries.get(path)
        if cached is None or cached[0] != file_identity(path):
            return None
        return cached[1]

    def clear(self) -> None:
        self._entries.clear()
