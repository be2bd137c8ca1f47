"""What regions/nocfi.py derives from a file (its code without CFI, the function
symbols in it), kept on disk between sessions: for node's executable (76,000 FDEs,
110,000 symbols) computing them is ~0.16 s of every session's first ``bt``, reading
them back ~1 ms.

Where: ``$XDG_CACHE_HOME/jit-unwind/nocfi`` (by default ``~/.cache/jit-unwind/nocfi``),
one file per file and kind, named by the file's identity (device, inode, size,
modification time in ns) and by the reader's own (its modules' sizes and modification
times): a file rebuilt or replaced, or a changed reader, never reads an old entry.  An
entry also holds the identity of the other files its value was computed from (the
separate debug file, whose .debug_frame counts as CFI): one installed, changed or
removed since makes the value computed again.  ``marshal``, written atomically when
computed; at most MAX_FILES entries.  ``JIT_UNWIND_NOCFI_CACHE=0`` turns it off; a
directory that cannot be written is the same as none."""

import marshal
import os
from typing import Callable, List, Optional, TypeVar

from ..coreread import disk_cache
from ..file_cache import file_identity

ENV = "JIT_UNWIND_NOCFI_CACHE"
SUFFIX = ".nocfi"
MAX_FILES = 128
# The modules whose results are kept: any change to one of them is another reader.
READER = (("regions", "nocfi.py"), ("regions", "nocfi_cache.py"), ("", "rawelf.py"),
          ("", "leb128.py"))

Value = TypeVar("Value")
_reader: Optional[str] = None


def cache_directory() -> Optional[str]:
    return disk_cache.cache_directory(ENV, "nocfi")


def _reader_identity() -> str:
    global _reader
    if _reader is None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        _reader = disk_cache.reader_identity(
            package, [os.path.join(folder, name) for folder, name in READER])
    return _reader


def kept(path: str, kind: str, compute: Callable[[str], Value],
         depends: Callable[[str], List[str]], valid: Callable[[object], bool]) -> Value:
    """``compute(path)``, read from the cache when an entry of ``kind`` for the file now
    at ``path`` is there, its ``depends(path)`` files unchanged and ``valid(value)``;
    else computed and written there.  Exceptions of ``compute`` are the caller's."""
    directory = cache_directory()
    identity = file_identity(path) if directory else None
    if directory is None or identity is None:
        return compute(path)
    device, inode, size, mtime = identity
    entry = os.path.join(directory, f"{device:x}-{inode:x}-{size:x}-{mtime:x}-"
                                    f"{_reader_identity()}-{kind}{SUFFIX}")
    others = [(other, file_identity(other)) for other in depends(path)]
    try:
        with open(entry, "rb") as handle:
            kept_others, value = marshal.load(handle)
        if kept_others == others and valid(value):
            return value
    except (OSError, EOFError, ValueError, TypeError):
        pass  # none yet, or cut short or garbage: computed and written again
    value = compute(path)
    try:
        data = marshal.dumps((others, value))
    except ValueError:  # a value marshal cannot hold: nothing kept
        return value
    disk_cache.write_entry(directory, entry, data, SUFFIX, MAX_FILES)
    return value
