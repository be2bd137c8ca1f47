"""Where executable memory is, and which of it is JIT code.

A :class:`RegionMap` is built once per stop from the process mappings (live process or
core file) and named entries (perf maps, GDB's JIT interface), then answers the unwinder's
questions with binary searches: is this pc JIT code, where does its function start, is
this address executable, which mapping holds this stack pointer.
"""

import bisect
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence

from ..model import Region


@dataclass(frozen=True)
class Mapping:
    """One mapping of the address space, as /proc/PID/maps or a core file shows it."""

    start: int
    end: int
    perms: str  # "r-xp" style; only r, w, x matter here
    path: str = ""
    offset: int = 0  # file offset of ``start`` for file-backed mappings

    @property
    def executable(self) -> bool:
        return "x" in self.perms

    @property
    def anonymous(self) -> bool:
        """True for memory no file backs: where JIT code lives."""
        path = self.path
        return (not path or path.startswith(("[anon", "/memfd:", "[heap]"))
                or path == "/dev/zero (deleted)")

    def __contains__(self, address: int) -> bool:
        return self.start <= address < self.end


class _SortedRanges:
    """Non-overlapping-or-nested ranges searchable by address (innermost = latest start)."""

    def __init__(self, items: Iterable):
        self.items = sorted(items, key=lambda item: (item.start, -item.end))
        self._starts = [item.start for item in self.items]

    def find(self, address: int):
        index = bisect.bisect_right(self._starts, address) - 1
        # Entries may overlap (a JIT reuses memory, or a perf map still holds lines of
        # a dead process with the same pid): the latest entry holding the address wins.
        # Bounded: look back a few entries only.
        best = None
        for candidate in range(index, max(index - 8, -1), -1):
            item = self.items[candidate]
            if item.start <= address < item.end and (
                    best is None or getattr(item, "sequence", 0) > getattr(best, "sequence", 0)):
                best = item
        return best

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


# The last perf map filtered, with the JIT mappings it was filtered by: a perf map can
# have many thousands of lines, and neither changes between most stops.
_last_filtered: list = [None, None, None]


def _current_entries(symbols: Sequence[Region], jit: Optional[_SortedRanges]) -> List[Region]:
    """The entries of ``symbols`` that may describe code there now: not those a later
    entry at the same start covers (a JIT freed code and put other code there), and
    only those starting in JIT code (one of ``jit``'s regions) unless ``jit`` is None."""
    key = (len(symbols), tuple((r.start, r.end) for r in jit) if jit is not None else None)
    if _last_filtered[0] is symbols and _last_filtered[1] == key:
        return _last_filtered[2]
    latest = {}  # start -> the latest entry there
    for entry in symbols:
        known = latest.get(entry.start)
        if known is None or entry.sequence >= known.sequence:
            latest[entry.start] = entry
    kept = [s for s in symbols
            if (s is latest[s.start] or s.end > latest[s.start].end)
            and (jit is None or jit.find(s.start) is not None)]
    _last_filtered[:] = [symbols, key, kept]
    return kept


class RegionMap:
    """Answers address questions for one stop of one process."""

    def __init__(self, mappings: Sequence[Mapping] = (), symbols: Sequence[Region] = (),
                 registered: Sequence[Region] = (), not_jit: Sequence[int] = (),
                 source: str = "maps"):
        """``symbols`` are named entries (perf map); ``registered`` are regions a
        debugger already handles (GDB JIT interface); ``not_jit`` are start addresses
        of anonymous executable mappings that hold no JIT code (the vDSO in a core);
        ``source`` names where the mappings came from ("maps" or "core")."""
        self.mappings = _SortedRanges(mappings)
        skip = set(not_jit)
        self.jit = _SortedRanges(
            Region(m.start, m.end, source, m.path) for m in mappings
            if m.executable and m.anonymous and m.start not in skip)
        # A perf map's line naming memory that is no JIT code here (unmapped, a file's
        # code, data) is left over from code freed since or from another process with
        # the same pid: it would make ordinary frames look like JIT code.  Kept all
        # when the mappings are unknown.  Lines superseded at their start are dropped.
        symbols = _current_entries(symbols, self.jit if len(self.mappings) else None)
        self.symbols = _SortedRanges(symbols)
        self.registered = _SortedRanges(registered)
        # Results worth keeping for this stop, e.g. decoded function starts by pc: a
        # recursion through JIT code asks about the same few pcs thousands of times.
        self.memo: dict = {}

    def add_symbols(self, symbols: Sequence[Region]) -> None:
        """Add named entries found later (a runtime's JIT code, GDB's JIT interface),
        read only once a pc turns out to be in JIT code."""
        registered = [s for s in symbols if s.source == "gdb-jit"]
        named = [s for s in symbols if s.source != "gdb-jit"]
        if named:
            self.symbols = _SortedRanges(list(self.symbols) + named)
        if registered:
            self.registered = _SortedRanges(list(self.registered) + registered)

    # -- questions the unwinder asks ---------------------------------------------------
    def jit_region_at(self, address: int) -> Optional[Region]:
        """The JIT region holding ``address``, or None for ordinary code and data."""
        region = self.jit.find(address)
        if region is None:
            # A perf-map entry outside any known mapping (e.g. a core without the
            # mapping list) still marks JIT code.
            region = self.symbols.find(address)
        return region

    def symbol_at(self, address: int) -> Optional[Region]:
        """The named entry (perf map, JIT interface) holding ``address``."""
        return self.symbols.find(address) or self.registered.find(address)

    def is_registered(self, address: int) -> bool:
        """True when the debugger already knows this code (GDB's JIT interface)."""
        return self.registered.find(address) is not None

    def mapping_at(self, address: int) -> Optional[Mapping]:
        return self.mappings.find(address)

    def is_executable(self, address: int) -> bool:
        mapping = self.mappings.find(address)
        if mapping is not None:
            return mapping.executable
        return self.symbols.find(address) is not None

    def has_jit(self) -> bool:
        return bool(len(self.jit) or len(self.symbols))

    def listing(self) -> List[Region]:
        """Every JIT region and named entry, sorted by address, for display."""
        rows = list(self.jit) + list(self.symbols) + list(self.registered)
        return sorted(rows, key=lambda r: (r.start, r.source == "perf-map", r.end))
