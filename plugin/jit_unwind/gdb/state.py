"""Per-stop state: the region map and what the unwinder found, dropped on every event
that can change them (stop, continue, new object file, exit, memory written)."""

from typing import Dict, Optional, Tuple

import gdb

from ..model import Unwound
from ..regions import RegionMap
from .discovery import build_region_map


class StopState:
    def __init__(self) -> None:
        self._regions: Optional[RegionMap] = None
        self._key: Optional[Tuple[int, int]] = None
        self.problem = ""
        # (pc, sp) of a frame we unwound -> how; (pc, sp) of a caller we found by a guess.
        self.unwound: Dict[Tuple[int, int], Unwound] = {}
        self.guessed: Dict[int, Dict[int, Unwound]] = {}
        # Anything else worth computing once per stop (the CPython runtime, ...).
        self.cache: Dict[str, object] = {}

    def invalidate(self, *_args) -> None:
        self._regions = None
        self.unwound.clear()
        self.guessed.clear()
        self.cache.clear()

    def connect(self) -> None:
        events = gdb.events
        for name in ("stop", "cont", "new_objfile", "clear_objfiles", "exited",
                     "memory_changed", "inferior_call", "new_inferior", "inferior_deleted"):
            registry = getattr(events, name, None)
            if registry is not None:
                registry.connect(self.invalidate)

    def check_inferior(self) -> None:
        """Drop everything when another inferior or process is selected."""
        inferior = gdb.selected_inferior()
        key = (inferior.num, inferior.pid)
        if key != self._key:
            self.invalidate()
            self._key = key

    def regions(self) -> RegionMap:
        self.check_inferior()
        if self._regions is None:
            self._regions, self.problem = build_region_map(gdb.selected_inferior())
        return self._regions

    def record(self, pc: int, sp: int, unwound: Unwound) -> None:
        self.unwound[(pc, sp)] = unwound
        if unwound.guess and unwound.caller_pc is not None:
            self.guessed.setdefault(unwound.caller_pc, {})[unwound.caller_sp] = unwound


STATE = StopState()
