"""Per-stop state: the region map and what the unwinder found, dropped on every event
that can change them (continue, new object file, exit, memory written, inferior call)."""

from typing import Callable, Dict, List, Optional, Tuple

import gdb

from ..model import Region, Unwound
from ..regions import RegionMap
from .discovery import build_region_map


class StopState:
    def __init__(self) -> None:
        self._regions: Optional[RegionMap] = None
        self.has_jit: Optional[bool] = None
        self._key: Optional[Tuple[int, int]] = None
        self.problem = ""
        # (pc, sp) of a frame we unwound -> how; (pc, sp) of a caller we found by a guess.
        self.unwound: Dict[Tuple[int, int], Unwound] = {}
        self.unwound_pcs = set()  # lets the frame filter skip reading sp elsewhere
        self.guessed: Dict[int, Dict[int, Unwound]] = {}
        # (pc, sp) of a frame GDB could not unwind -> GDB's error: GDB says it once, then
        # only "no reason" for that frame, and both bt and py-mixed-bt must show it.
        self.gdb_stops: Dict[Tuple[int, Optional[int]], str] = {}
        # Anything else worth computing once per stop (the CPython runtime, ...).
        self.cache: Dict[str, object] = {}
        # Sources of named JIT regions too costly to read unless a pc is in JIT code.
        self.symbol_loaders: List[Callable[[], List[Region]]] = []
        self._named = False

    def invalidate(self, *_args) -> None:
        self._regions = None
        self.has_jit = None  # known once regions() has run this stop
        self._named = False
        self.unwound.clear()
        self.unwound_pcs.clear()
        self.guessed.clear()
        self.gdb_stops.clear()
        self.cache.clear()

    def connect(self) -> None:
        events = gdb.events
        # Not "stop": nothing changes between a stop and the next resumption ("cont"),
        # and the map GDB's own stop handling built stays good for the first bt.
        for name in ("cont", "new_objfile", "clear_objfiles", "exited", "memory_changed",
                     "inferior_call", "new_inferior", "inferior_deleted"):
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
        """The region map of this stop; cheap after the first call (the unwinder asks
        for every frame)."""
        if self._regions is None:
            self.check_inferior()
            self._regions, self.problem = build_region_map(gdb.selected_inferior())
            self.has_jit = self._regions.has_jit()
        return self._regions

    def named_regions(self) -> RegionMap:
        """The region map with the named JIT regions of runtimes added."""
        regions = self.regions()
        if not self._named:
            self._named = True
            for loader in self.symbol_loaders:
                try:
                    regions.add_symbols(loader())
                except Exception as error:  # a runtime we cannot read: names only
                    self.problem = f"cannot read JIT regions: {error}"
        return regions

    def record(self, pc: int, sp: int, unwound: Unwound) -> None:
        self.unwound[(pc, sp)] = unwound
        self.unwound_pcs.add(pc)
        if unwound.guess and unwound.caller_pc is not None:
            self.guessed.setdefault(unwound.caller_pc, {})[unwound.caller_sp] = unwound


STATE = StopState()
