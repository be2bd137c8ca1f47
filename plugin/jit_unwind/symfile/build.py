"""Which named JIT regions go into the symbol file, and the file's bytes.

Named regions of this stop (perf map, CPython's executor shims and traces) that lie in
JIT memory: not code GDB's JIT interface registered (GDB has its own symbols for it) and
not addresses inside a mapped file (the file's own symbols name those).  Where entries
overlap (a perf map with lines of a dead process of the same pid) the later one wins.

A V8 or CPython perf map has tens of thousands of lines, and the file is written at
the stop the user waits for: one pass over the sorted regions, identical code decoded
once, and the tables packed in bulk.
"""

import bisect
import itertools
import operator
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..model import CodeKind, Region
from ..regions import RegionMap
from ..target import Memory
from ..arch.x86_64_decoder import decode_steps
from .eh_frame import build_eh_frame, cfa_program
from .elf import CodeSection, write_elf
from .table_rules import JitdumpRules

MAX_FUNCTIONS = 1_000_000
MAX_SECTIONS = 4096
MAX_CODE_READ = 64 << 20      # bytes of JIT memory read for unwind rules, in all
MAX_DECODED = 4096            # bytes decoded per function
# Kinds of region whose first byte starts code a decode can follow (not a trace).
DECODABLE = (CodeKind.FUNCTION, CodeKind.SHIM)

Span = Optional[Tuple[int, int]]  # the JIT mapping holding a function, if known
Rule = Tuple[int, bytes]  # (bytes covered from the function's start, CFA program)


class Selection(NamedTuple):
    """The functions of a symbol file (sorted by start, not overlapping), the JIT mapping
    of each, and their starts and ends (the symbol table's columns, computed once)."""

    functions: List[Region]
    spans: List[Span]
    starts: List[int]
    ends: List[int]


def symbol_file_regions(regions: RegionMap) -> List[Region]:
    """The named regions to put in the symbol file, sorted by start, not overlapping."""
    return select(regions).functions


def select(regions: RegionMap) -> Selection:
    """The regions for the symbol file and the JIT mapping of each (None for entries
    outside every known mapping, e.g. a core without a mapping list)."""
    found = _select_in_bulk(regions)
    return found if found is not None else _select_one_by_one(regions)


def _select_in_bulk(regions: RegionMap) -> Optional[Selection]:
    """:func:`select` for the usual map (a perf map or CPython's executors): every entry
    inside a JIT mapping, none overlapping another, no JIT interface entries.  A binary
    search per JIT mapping and C-level passes over the entries, which a perf map has by
    the ten thousand; None for any other map (then :func:`_select_one_by_one`)."""
    if len(regions.registered):
        return None
    symbols = regions.symbols.items  # sorted by start
    if not symbols:
        return Selection([], [], [], [])
    starts = regions.symbols.starts
    ends = [symbol.end for symbol in symbols]  # a list comprehension beats map here
    if not all(map(operator.ge, itertools.islice(starts, 1, None), ends)):
        return None  # overlapping entries: the later one wins, entry by entry
    spans: List[Span] = []
    begin = 0
    for mapping in regions.jit.items:  # sorted, not overlapping
        first = bisect.bisect_left(starts, mapping.start, begin)
        if first != begin:
            return None  # entries before this mapping: in a file, or no mapping known
        begin = bisect.bisect_left(starts, mapping.end, first)
        spans.extend(itertools.repeat((mapping.start, mapping.end), begin - first))
    if begin != len(symbols):
        return None
    return Selection(list(symbols[:MAX_FUNCTIONS]), spans[:MAX_FUNCTIONS],
                     starts[:MAX_FUNCTIONS], ends[:MAX_FUNCTIONS])


def _select_one_by_one(regions: RegionMap) -> Selection:
    kept: List[Region] = []
    spans: List[Span] = []
    jit = regions.jit.items  # sorted by start, not overlapping
    registered = len(regions.registered) > 0
    index, count = 0, len(jit)
    for region in regions.symbols:  # sorted by start
        start = region.start
        while index < count and jit[index].end <= start:
            index += 1
        if index < count and jit[index].start <= start:
            span: Span = (jit[index].start, jit[index].end)
        elif regions.mapping_at(start) is not None:
            continue  # inside a mapped file: not JIT code
        else:
            span = None
        if registered and regions.registered.find(start) is not None:
            continue
        if kept and start < kept[-1].end:
            overlapped = []
            while kept and start < kept[-1].end:
                overlapped.append((kept.pop(), spans.pop()))
            if any(other.sequence > region.sequence for other, _ in overlapped):
                for other, other_span in reversed(overlapped):  # a later line wins
                    kept.append(other)
                    spans.append(other_span)
                continue
        kept.append(region)
        spans.append(span)
        if len(kept) >= MAX_FUNCTIONS:
            break
    return Selection(kept, spans, [f.start for f in kept], [f.end for f in kept])


def code_sections(functions: Sequence[Region], spans: Sequence[Span]) -> List[CodeSection]:
    """One SHT_NOBITS section per JIT mapping holding functions (never spanning memory
    between mappings, where libraries may lie; functions outside any known mapping get
    one per run of touching functions), each with the number of ``functions`` (in
    order) it holds.  Past MAX_SECTIONS sections the remaining functions are left out.
    Selected functions never overlap, so the last of a run ends last."""
    sections: List[CodeSection] = []
    position = 0
    for span, group in itertools.groupby(spans):
        size = len(list(group))
        if span is not None:
            runs = [(position, position + size)]
        else:
            runs = _touching_runs(functions, position, position + size)
        for begin, end in runs:
            if len(sections) >= MAX_SECTIONS:
                return sections
            start = functions[begin].start
            sections.append(CodeSection(f".text.jit{len(sections)}", start,
                                        functions[end - 1].end - start, end - begin))
        position += size
    return sections


def _touching_runs(functions: Sequence[Region], begin: int, end: int
                   ) -> List[Tuple[int, int]]:
    """(first, past last) index of each run of touching functions in [begin, end)."""
    runs = []
    for index in range(begin + 1, end + 1):
        if index == end or functions[index].start > functions[index - 1].end:
            runs.append((begin, index))
            begin = index
    return runs


def unwind_rules(memory: Memory, functions: Sequence[Region], spans: Sequence[Span],
                 record_at: Optional[Callable[[int], object]] = None
                 ) -> Tuple[List[int], List[Rule]]:
    """The starts of the functions whose start we can decode, and for each (bytes
    covered, CFA program): its straight-line code, as far as the decoder understands it
    (up to its ``ret``, a branch or an instruction it does not know).  Each JIT mapping
    is read once; identical code (every CPython perf trampoline) is decoded once, and
    its rule is one shared tuple.  A function that a jitdump unwinding record covers
    (``record_at``: address -> record) gets its JIT's own rules instead, exact."""
    starts: List[int] = []
    rules: List[Rule] = []
    decoded: Dict[bytes, Rule] = {}
    budget = MAX_CODE_READ
    position = 0
    exact = set()
    if record_at is not None:
        writers_rules = JitdumpRules(record_at)
        for function in functions:
            placed = writers_rules(function.start, function.end)
            if placed:  # else decoded, as without a record
                exact.add(function.start)
                starts.extend(start for start, _size, _program in placed)
                rules.extend((size, program) for _start, size, program in placed)
    for span, group in itertools.groupby(spans):  # one group per JIT mapping
        size = len(list(group))
        members = [f for f in functions[position:position + size]
                   if f.kind in DECODABLE and f.start not in exact]
        position += size
        if span is None:  # no mapping known: each function's bytes on their own
            codes = []
            for function in members:
                length = min(function.end - function.start, MAX_DECODED)
                code = memory.try_read(function.start, length) if 0 < length <= budget else None
                budget -= max(length, 0)
                codes.append(code or b"")
        else:
            length = span[1] - span[0]
            chunk = memory.try_read(span[0], length) if 0 < length <= budget else None
            budget -= max(length, 0)
            if chunk is None:
                continue
            base = span[0]
            codes = [chunk[f.start - base:f.end - base] for f in members]
            if codes and max(map(len, codes)) > MAX_DECODED:  # rare: clip only then
                codes = [code[:MAX_DECODED] for code in codes]
        for code in dict.fromkeys(codes):  # C-level: each distinct code once
            if code not in decoded:
                decoded[code] = _rules_of(code)
        found = list(map(decoded.__getitem__, codes))
        starts.extend([function.start for function, rule in zip(members, found) if rule[0]])
        rules.extend([rule for rule in found if rule[0]])
    return starts, rules


def _rules_of(code: bytes) -> Rule:
    """(bytes covered, CFA program) of ``code`` from its first byte; (0, b"") without."""
    if not code:
        return 0, b""
    steps, covered = decode_steps(code)
    try:
        return (covered, cfa_program(steps)) if covered else (0, b"")
    except ValueError:  # a rule no CFA program can say: no rules for this code
        return 0, b""


def symbol_file_bytes(memory: Memory, regions: RegionMap, functions: Sequence[Region],
                      spans: Optional[Sequence[Span]] = None,
                      with_unwind_rules: bool = True,
                      selection: Optional[Selection] = None, machine: int = 62,
                      names_for_gdb: bool = False) -> bytes:
    """The ELF for ``functions`` (from :func:`select`, with their ``spans``; or the
    whole ``selection``), for the processor ``machine`` (an ELF ``e_machine``; the
    unwind rules are decoded from x86-64 code only); ``names_for_gdb``: see
    names_for_gdb.py."""
    starts = ends = None
    if selection is not None:
        functions, spans, starts, ends = selection
    elif spans is None:
        found = select(regions)
        by_start = dict(zip(found.functions, found.spans))
        spans = [by_start.get(f, None) for f in functions]
    sections = code_sections(functions, spans)
    kept = sum(section.count for section in sections)
    if kept < len(functions):
        functions, spans = functions[:kept], spans[:kept]
        starts, ends = None, None
    record_at = regions.unwind_record_at if len(regions.unwind_records) else None
    rule_starts, rules = (unwind_rules(memory, functions, spans, record_at)
                          if with_unwind_rules and machine == 62 else ([], []))
    return write_elf(sections, functions, build_eh_frame(rule_starts, rules) if rules else b"",
                     starts, ends, machine, names_for_gdb)
