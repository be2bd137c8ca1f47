"""Where executable memory is, and which of it is JIT code.

A :class:`RegionMap` is built once per stop from the process mappings (live process or
core file) and named entries (perf maps, GDB's JIT interface), then answers the unwinder's
questions with binary searches: is this pc JIT code, where does its function start, is
this address executable, which mapping holds this stack pointer.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import bisect
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from ..file_cache import FILE_ERRORS
from ..model import CodeKind, Mapping, Region, RegionSource

__all__ = ["Mapping", "Region", "RegionMap"]


class _SortedRanges:
    """Non-overlapping-or-nested ranges searchable by address (innermost = latest start)."""

    def __init__(self, items: Iterable):
        self.items = sorted(items, key=lambda item: (item.start, -item.end))
        self._starts = [item.start for item in self.items]
        # Most lists never overlap (mappings, one JIT's regions): then the entry
        # before ``address`` is the only candidate, with no look-back.
        self._disjoint = all(before.end <= after.start
                             for before, after in zip(self.items, self.items[1:]))

    def find(self, address: int):
        index = bisect.bisect_right(self._starts, address) - 1
        if self._disjoint:
            if index < 0:
                return None
            item = self.items[index]
            return item if address < item.end else None
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

    @property
    def starts(self) -> List[int]:
        """The items' starts, in order (do not change it)."""
        return self._starts

    def __iter__(self):
        return iter(self.items)

    def __len__(self):
        return len(self.items)


# The last perf map filtered, with the JIT mappings it was filtered by: a perf map can
# have many thousands of lines, and neither changes between most stops.
_last_filtered: list = [None, None, None]


def _current_entries(symbols: Sequence[Region], jit: Optional[_SortedRanges],
                     runtime_code: Callable[[int], bool] = lambda address: False
                     ) -> List[Region]:
    """The entries of ``symbols`` that may describe code there now: not those a later
    entry at the same start covers (a JIT freed code and put other code there), and
    only those starting in JIT code (one of ``jit``'s regions) or where
    ``runtime_code(start)`` (code a runtime generated into a file: no CFI covers it),
    unless ``jit`` is None."""
    key = (len(symbols), tuple((r.start, r.end) for r in jit) if jit is not None else None)
    if _last_filtered[0] is symbols and _last_filtered[1] == key:
        return _last_filtered[2]
    latest: dict[int, Region] = {}  # start -> the latest entry there
    for entry in symbols:
        known = latest.get(entry.start)
        if known is None or entry.sequence >= known.sequence:
            latest[entry.start] = entry
    kept = [s for s in symbols
            if (s is latest[s.start] or s.end > latest[s.start].end)
            and (jit is None or jit.find(s.start) is not None or runtime_code(s.start))]
    _last_filtered[:] = [symbols, key, kept]
    return kept


class RegionMap:
    """Answers address questions for one stop of one process."""

    def __init__(self, mappings: Sequence[Mapping] = (), symbols: Sequence[Region] = (),
                 registered: Sequence[Region] = (), not_jit: Sequence[int] = (),
                 source: RegionSource = RegionSource.MAPS):
        """``symbols`` are named entries (perf map); ``registered`` are regions a
        debugger already handles (GDB JIT interface); ``not_jit`` are start addresses
        of anonymous executable mappings that hold no JIT code (the vDSO in a core);
        ``source`` names where the mappings came from ("maps" or "core")."""
        self.mappings = _SortedRanges(mappings)
        skip = set(not_jit)
        self.jit = _SortedRanges(
            Region(m.start, m.end, source, m.path) for m in mappings
            if m.executable and m.anonymous and m.start not in skip)
        # Results worth keeping for this stop, e.g. decoded function starts by pc: a
        # recursion through JIT code asks about the same few pcs thousands of times.
        # Keys of results that depend on the named entries start with "named".
        self.memo: dict = {}
        # A perf map's line naming memory that is no JIT code here (unmapped, a file's
        # code with CFI, data) is left over from code freed since or from another
        # process with the same pid: it would make ordinary frames look like JIT code.
        # A line naming a file's code without CFI stays: code the runtime generated
        # into its executable (V8's embedded builtins, `Builtin:JSEntry`), unwound as
        # JIT code from the start the line gives.  Kept all when the mappings are
        # unknown.  Lines superseded at their start are dropped.
        symbols = _current_entries(symbols, self.jit if len(self.mappings) else None,
                                   self._in_file_code_without_cfi)
        self.symbols = _SortedRanges(symbols)
        self.registered = _SortedRanges(registered)
        # Code a JIT described with its own unwind tables (jitdump unwinding records).
        self.unwind_records = _SortedRanges(())
        self._spans: Optional[tuple] = None  # see near_jit()
        self._file_code: Optional[tuple] = None  # see in_file_code()
        # address -> code_at's answer: a stack asks about the same return addresses
        # again and again (recursion, every bt of a stop).
        self._code: dict = {}

    def fresh(self) -> "RegionMap":
        """A map of the same regions for another stop: what was derived from the
        regions is shared, nothing remembered during a stop is."""
        if self._spans is None:
            self.near_jit(0)  # derive once, for every copy
        if self._file_code is None:
            self.in_file_code(0)
        copy = RegionMap.__new__(RegionMap)
        copy.__dict__.update(self.__dict__)
        copy.memo = {}
        copy._code = {}
        return copy

    def add_symbols(self, symbols: Sequence[Region]) -> None:
        """Add named entries found later (a runtime's JIT code, GDB's JIT interface),
        read only once a pc turns out to be in JIT code."""
        registered = [s for s in symbols if s.source == RegionSource.GDB_JIT]
        named = [s for s in symbols if s.source != RegionSource.GDB_JIT]
        if named:
            self.symbols = _SortedRanges(list(self.symbols) + named)
            self._spans = None
        if registered:
            self.registered = _SortedRanges(list(self.registered) + registered)
        self._code.clear()
        self.forget_named()

    def add_unwind_records(self, records: Sequence) -> None:
        """Add code whose JIT gave its ``.eh_frame`` (objects with start, end, sequence:
        jitdump records), read once a pc turns out to be in JIT code."""
        if records:
            self.unwind_records = _SortedRanges(list(self.unwind_records) + list(records))
            self.forget_named()

    def forget_named(self) -> None:
        """Drop what was remembered from the named entries and unwind records (memo
        keys starting with "named"): entries were added."""
        for key in [key for key in self.memo if type(key) is tuple and key[0] == "named"]:
            del self.memo[key]

    def unwind_record_at(self, address: int):
        """The latest unwind record covering ``address``, None without."""
        return self.unwind_records.find(address)

    # -- questions the unwinder asks ---------------------------------------------------
    def jit_region_at(self, address: int) -> Optional[Region]:
        """The JIT region holding ``address``, or None for ordinary code and data."""
        region = self.jit.find(address)
        if region is None:
            # A perf-map entry outside any known mapping (e.g. a core without the
            # mapping list) still marks JIT code.
            region = self.symbols.find(address)
        return region

    def near_jit(self, pc: int) -> bool:
        """False when neither ``pc`` nor ``pc - 1`` can be in JIT code: the unwinder's
        test for every frame, one binary search over the merged JIT ranges.  True
        means "ask jit_region_at" (a caller's pc is looked up at pc - 1)."""
        starts, ends = self._jit_spans()
        index = bisect.bisect_right(starts, pc) - 1
        return index >= 0 and pc <= ends[index]

    def jit_bounds(self) -> Tuple[int, int]:
        """(lowest, highest) address near_jit can be true for; (1, 0) without JIT code:
        a scan of the stack rules most words out with two comparisons."""
        starts, ends = self._jit_spans()
        return (starts[0], ends[-1]) if starts else (1, 0)

    def _jit_spans(self):
        """The JIT ranges merged (starts, ends), made at the first question."""
        spans = self._spans
        if spans is None:
            spans = self._spans = _merged(list(self.jit) + list(self.symbols))
        return spans

    def in_file_code(self, pc: int) -> bool:
        """True when ``pc`` and ``pc - 1`` lie in a file's executable mapping (a
        program's or library's code, never JIT code) and no named entry covers them."""
        spans = self._file_code
        if spans is None:
            spans = self._file_code = _merged(
                m for m in self.mappings if m.executable and not m.anonymous)
        starts, ends = spans
        index = bisect.bisect_right(starts, pc) - 1
        return index >= 0 and starts[index] < pc < ends[index] and not self.near_jit(pc)

    def symbol_at(self, address: int) -> Optional[Region]:
        """The named entry (perf map, JIT interface) holding ``address``."""
        return self.symbols.find(address) or self.registered.find(address)

    def is_registered(self, address: int) -> bool:
        """True when the debugger already knows this code (GDB's JIT interface)."""
        return self.registered.find(address) is not None

    def is_trace(self, address: int) -> bool:
        """True for code a runtime enters through a shim (a CPython JIT trace)."""
        symbol = self.symbol_at(address)
        return symbol is not None and symbol.kind == CodeKind.TRACE

    def code_at(self, address: int) -> Optional[Region]:
        """What the unwinder asks of every frame: the JIT region or the range of code
        without CFI (source "no-cfi") holding ``address``, None for code the debugger
        unwinds itself.  One dictionary lookup for an address asked about before."""
        try:
            return self._code[address]
        except KeyError:
            pass
        region = self.jit_region_at(address)
        if region is None:
            region = self.nocfi_at(address)
        if len(self._code) < 100_000:
            self._code[address] = region
        return region

    def nocfi_at(self, address: int) -> Optional[Region]:
        """The range of code without call frame information holding ``address`` in a
        mapped file (regions/nocfi.py), or None: the stretch around that one pc
        (regions/nocfi_pc.py) where the file's FDEs tell, else the file's ranges,
        computed the first time one of its pcs is asked about (then kept per file)."""
        mapping = self.mappings.find(address)
        if (mapping is None or not mapping.executable or mapping.anonymous
                or not mapping.path.startswith("/")):
            return None
        key = (RegionSource.NOCFI, mapping.path)
        ranges = self.memo.get(key)
        if ranges is None:
            from .nocfi import nocfi_regions
            from .nocfi_pc import UNKNOWN, file_view, region_at
            view_key = (RegionSource.NOCFI, "view", mapping.path)
            if view_key not in self.memo:
                self.memo[view_key] = file_view(mapping.path, self.mappings)
            region = region_at(mapping, address, self.memo[view_key])
            if region is not UNKNOWN:
                return region  # one pc's answer: the file's gaps are not needed
            ranges = self.memo[key] = _SortedRanges(nocfi_regions(mapping.path, self.mappings))
        return ranges.find(address) if len(ranges) else None

    def _in_file_code_without_cfi(self, address: int) -> bool:
        """True when ``address`` is code of a mapped file that no CFI covers."""
        try:
            return self.nocfi_at(address) is not None
        except FILE_ERRORS:  # an unreadable file: its code is no runtime's
            return False

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
        return sorted(rows, key=lambda r: (r.start, r.source == RegionSource.PERF_MAP, r.end))


def _merged(ranges) -> tuple:
    """Sorted starts and ends of the union of ``ranges``, overlapping ones joined."""
    starts: List[int] = []
    ends: List[int] = []
    for item in sorted(ranges, key=lambda r: r.start):
        if ends and item.start <= ends[-1]:
            ends[-1] = max(ends[-1], item.end)
        else:
            starts.append(item.start)
            ends.append(item.end)
    return starts, ends
