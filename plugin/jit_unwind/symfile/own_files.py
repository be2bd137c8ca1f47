"""The object files the plugin adds to the debugger itself (the JIT symbol file): they
change no region, so the debugger's events about them keep the stop's cache (which
would otherwise read the mappings and the perf map again at the next ``bt``)."""

from __future__ import annotations  # annotations unevaluated: less work at load

import contextlib
from typing import Iterator, Optional, Set


class OwnObjectFiles:
    def __init__(self) -> None:
        self._paths: Set[str] = set()
        # True while we remove one of ours: GDB then fires clear_objfiles too (13 and
        # 18, measured), which names no file.
        self.removing = False

    def add(self, path: str) -> None:
        """``path`` is about to be loaded by us."""
        self._paths.add(path)

    def changes_regions(self, path: Optional[str]) -> bool:
        """Whether an object file event about ``path`` may change this stop's regions."""
        return path not in self._paths

    def is_own(self, path: Optional[str]) -> bool:
        """``path`` is a file we loaded (its names are ours, not the program's)."""
        return path in self._paths

    @contextlib.contextmanager
    def removing_one(self) -> Iterator[None]:
        self.removing = True
        try:
            yield
        finally:
            self.removing = False
