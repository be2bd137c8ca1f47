"""Which named JIT regions go into the symbol file, and the file's bytes.

Named regions of this stop (perf map, CPython's executor shims and traces) that lie in
JIT memory: not code GDB's JIT interface registered (GDB has its own symbols for it) and
not addresses inside a mapped file (the file's own symbols name those).  Where entries
overlap (a perf map with lines of a dead process of the same pid) the later one wins.
"""

from typing import Dict, List, Optional, Sequence, Tuple

from ..model import Region
from ..regions import RegionMap
from ..target import Memory
from ..unwind.x86_64 import decode_steps
from .eh_frame import build_eh_frame, cfa_program
from .elf import CodeSection, FunctionSymbol, write_elf

MAX_FUNCTIONS = 1_000_000
MAX_SECTIONS = 4096
MAX_CODE_READ = 64 << 20      # bytes of JIT memory read for unwind rules, in all
MAX_DECODED = 4096            # bytes decoded per function
# Kinds of region whose first byte starts code a decode can follow (not a trace).
DECODABLE = ("function", "shim")


def symbol_file_regions(regions: RegionMap) -> List[Region]:
    """The named regions to put in the symbol file, sorted by start, not overlapping."""
    kept: List[Region] = []
    for region in regions.symbols:  # sorted by start
        if regions.registered.find(region.start) is not None:
            continue
        if (regions.jit.find(region.start) is None
                and regions.mapping_at(region.start) is not None):
            continue  # inside a mapped file: not JIT code
        overlapped = []
        while kept and region.start < kept[-1].end:
            overlapped.append(kept.pop())
        if any(other.sequence > region.sequence for other in overlapped):
            kept.extend(reversed(overlapped))  # a later line describes this code
            continue
        kept.append(region)
        if len(kept) >= MAX_FUNCTIONS:
            break
    return kept


def code_sections(regions: RegionMap, functions: Sequence[Region]) -> Tuple[
        List[CodeSection], List[int]]:
    """One SHT_NOBITS section per JIT mapping holding functions (never spanning memory
    between mappings, where libraries may lie; functions outside any known mapping get
    one per run of touching functions), and the section index of each function in
    order.  Past MAX_SECTIONS sections the remaining functions are left out: the list
    of indexes is then shorter than ``functions``."""
    sections: List[CodeSection] = []
    index_of: List[int] = []
    current = None  # [start, end, mapping key]
    for function in functions:
        mapping = regions.jit.find(function.start)
        key = (mapping.start, mapping.end) if mapping is not None else None
        joins = current is not None and (
            (key is not None and key == current[2])
            or (key is None and current[2] is None and function.start <= current[1]))
        if joins:
            current[1] = max(current[1], function.end)
        else:
            if current is not None:
                sections.append(_section(len(sections), current))
            if len(sections) >= MAX_SECTIONS:
                current = None
                break
            current = [function.start, function.end, key]
        index_of.append(len(sections))
    if current is not None:
        sections.append(_section(len(sections), current))
    return sections, index_of


def _section(number: int, span) -> CodeSection:
    return CodeSection(f".text.jit{number}", span[0], span[1] - span[0])


def unwind_rules(memory: Memory, regions: RegionMap, functions: Sequence[Region]
                 ) -> List[Tuple[int, int, bytes]]:
    """(start, bytes covered, CFA program) for every function whose start we can decode:
    its straight-line code, as far as the decoder understands it (up to its ``ret``, a
    branch or an instruction it does not know).
    Each JIT mapping is read once; identical code (every CPython perf trampoline) is
    decoded once."""
    rules = []
    chunks: Dict[Tuple[int, int], Optional[bytes]] = {}
    decoded: Dict[bytes, Tuple[int, bytes]] = {}
    budget = MAX_CODE_READ
    for function in functions:
        if function.kind not in DECODABLE:
            continue
        mapping = regions.jit.find(function.start)
        span = (mapping.start, mapping.end) if mapping is not None else (
            function.start, function.end)
        if span not in chunks:
            size = span[1] - span[0]
            chunks[span] = memory.try_read(span[0], size) if 0 < size <= budget else None
            budget -= max(size, 0)
        chunk = chunks[span]
        if chunk is None:
            continue
        offset = function.start - span[0]
        code = chunk[offset:offset + min(function.size, MAX_DECODED)]
        if code not in decoded:
            steps, covered = decode_steps(code)
            decoded[code] = (covered, cfa_program(steps)) if covered else (0, b"")
        covered, program = decoded[code]
        if covered:
            rules.append((function.start, covered, program))
    return rules


def symbol_file_bytes(memory: Memory, regions: RegionMap, functions: Sequence[Region],
                      with_unwind_rules: bool = True) -> bytes:
    sections, index_of = code_sections(regions, functions)
    symbols = [FunctionSymbol(f.name or f"[jit {f.start:#x}]", f.start, f.size, index)
               for f, index in zip(functions, index_of)]
    functions = functions[:len(index_of)]
    rules = unwind_rules(memory, regions, functions) if with_unwind_rules else []
    return write_elf(sections, symbols, build_eh_frame(rules) if rules else b"")
