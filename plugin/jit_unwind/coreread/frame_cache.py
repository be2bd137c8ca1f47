"""What DWARF said about each pc asked, kept on disk between runs of ``jit-unwind core
--debugger none``: the functions (inlined ones too), files and lines at a file address.
A second look at cores of the same program (the same core again, another of its
crashes) asks the same pcs of the same files, and the units and line tables decoded for
them are most of a run's time (CPython's eval loop and posixmodule.c: ~50 ms).

Where: ``$XDG_CACHE_HOME/jit-unwind/dwarf-frames`` (by default
``~/.cache/jit-unwind/dwarf-frames``), one file per DWARF file (the program's or its
separate debug file), named by that file's identity (device, inode, size, modification
time in ns) and by the reader's own (its modules' sizes and modification times: a
changed reader never reads answers of the one before).  The files' names in the line
table are kept, not the paths shown: whether a source is on disk is looked at anew.
``marshal``, written once at exit, atomically; at most 64 files
(``elf/disk_cache.DWARF_FRAMES``) and MAX_ENTRIES pcs a file.
``JIT_UNWIND_FRAME_CACHE=0`` turns it off; a directory that cannot be written is the
same as none."""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

import marshal
from typing import Dict, List, Optional

from ..elf.disk_cache import DWARF_FRAMES

MAX_ENTRIES = 4096

_dirty: Dict[str, "FrameCache"] = {}  # entry path -> cache, written at exit


def cache_directory() -> Optional[str]:
    return DWARF_FRAMES.directory()


class FrameCache:
    """The kept answers for one DWARF file: file address -> its raw frames
    (``units.RawFrame``), loaded from disk when made."""

    def __init__(self, path: str):
        self.entries: Dict[int, list] = {}
        self._entry: Optional[str] = DWARF_FRAMES.entry(path)
        if self._entry is None:
            return
        try:
            with open(self._entry, "rb") as handle:
                loaded = marshal.load(handle)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, EOFError, ValueError, TypeError):
            pass

    @property
    def loaded(self) -> bool:
        return bool(self.entries)

    def get(self, address: int) -> Optional[List[tuple]]:
        found = self.entries.get(address)
        return found if isinstance(found, list) else None

    def _write(self, entry: str) -> None:
        try:
            data = marshal.dumps(self.entries)
        except ValueError:  # a value marshal cannot hold: nothing kept
            return
        DWARF_FRAMES.write(entry, data)

    def put(self, address: int, frames: List[tuple]) -> None:
        if self._entry is None or len(self.entries) >= MAX_ENTRIES:
            return
        self.entries[address] = frames
        if not _dirty:
            import atexit
            atexit.register(write_all)
        _dirty[self._entry] = self


def write_all() -> None:
    """Every cache with new answers to disk (at exit)."""
    for entry, cache in list(_dirty.items()):
        cache._write(entry)
    _dirty.clear()
