"""Code inside mapped files that no call frame information covers.

Hand-written assembly, code built with ``-fno-asynchronous-unwind-tables``, a JavaScript
engine's embedded builtins: the debugger has no FDE for it and falls back to prologue
heuristics that may invent frames.  For each mapped ELF file we compute, once per file
(keyed by path, size and mtime), the parts of its code sections that no FDE of its
``.eh_frame`` (through the ``.eh_frame_hdr`` search table: a few bytes per FDE, no DWARF
parsing) or ``.debug_frame`` (its own, or the separate debug file found by build id)
covers.  Alignment padding between functions is left out, and so are ``.init``,
``.fini`` and the PLT, which the linker's own glue covers or no stack holds at a stop.
Kept on disk between sessions (elf_facts.py).  A frame's pc is answered by
regions/nocfi_pc.py without computing this (the same answer for one pc, from the FDEs
and symbols around it); this file-wide one is what a file with other CFI than
``.eh_frame`` needs for a pc no FDE of it covers.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import bisect
import os
import re
import struct
from typing import Dict, Iterable, List, Optional, Tuple

from ..elf.debug_files import by_build_id
from ..elf.pyelftools_errors import pyelftools_errors
from ..file_cache import FILE_ERRORS, FileCache
from ..elf.leb128 import read_uleb
from ..model import Region, RegionSource
from ..elf.rawelf import RawElf, file_bias, headers_of, load_bias
from ..elf.facts import kept
from ..elf.eh_frame_hdr import POINTER_FORMATS, read_search_table

SOURCE = RegionSource.NOCFI
MAX_FILES = 256
SKIPPED_SECTIONS = (".init", ".fini")
MAX_FDES = 2_000_000  # a table larger than this is not believed

# Per file (file_cache; none claimed for a file that cannot be read): the uncovered
# (start, end) file addresses, sorted; the function symbols (start, end, name) inside
# the gaps, sorted.  Its PT_LOADs, for the load bias, are its headers' (rawelf).
_gaps: FileCache[List[Tuple[int, int]]] = FileCache(MAX_FILES)
_functions: FileCache[List[Tuple[int, int, str]]] = FileCache(MAX_FILES)


def uncovered_ranges(path: str) -> List[Tuple[int, int]]:
    """File-address ranges of code in ``path`` without CFI (cached per file, in memory
    and on disk)."""
    return _gaps.get(path, lambda path: kept(path, "nocfi-gaps", _compute_gaps, _valid_gaps,
                                             debug_files_of), [])


def _valid_gaps(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(gap, tuple) and len(gap) == 2 and all(type(n) is int for n in gap)
        for gap in value)


def _valid_functions(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(entry, tuple) and len(entry) == 3 and type(entry[0]) is int
        and type(entry[1]) is int and type(entry[2]) is str for entry in value)


def _compute_gaps(path: str) -> List[Tuple[int, int]]:
    with open(path, "rb") as handle:
        elf = RawElf(handle, path)
        if elf.machine != 62:  # EM_X86_64
            return []
        sections = elf.sections
        code = [s for s in sections.values()
                if s["sh_type"] == "SHT_PROGBITS" and s["sh_flags"] & 0x4  # SHF_EXECINSTR
                and s["sh_size"] and s.name not in SKIPPED_SECTIONS
                and not s.name.startswith(".plt")]
        if not code:
            return []
        covered = _eh_frame_ranges(elf)
        if covered is None:
            return []  # an .eh_frame we cannot read: claim nothing
        covered += _debug_frame_ranges(elf)
        covered += _separate_debug_frame_ranges(elf)
        covered.sort()
        gaps = []
        for section in code:
            start, end = section["sh_addr"], section["sh_addr"] + section["sh_size"]
            data = None
            for gap_start, gap_end in _subtract(start, end, covered):
                if data is None:
                    data = section.data()
                if not PADDING.fullmatch(data, gap_start - start, gap_end - start):
                    gaps.append((gap_start, gap_end))
        return sorted(gaps)


def _subtract(start: int, end: int, covered: List[Tuple[int, int]]):
    """Parts of [start, end) outside every sorted range of ``covered``."""
    at = start
    for low, high in covered:
        if high <= at:
            continue
        if low >= end:
            break
        if low > at:
            yield at, low
        at = max(at, high)
        if at >= end:
            return
    if at < end:
        yield at, end


def _nop_operands(extra: int) -> bytes:
    """ModRM bytes of a ``nop r/m`` (``0f 1f``) followed by ``extra`` SIB and
    displacement bytes (no rip-relative in padding)."""
    return bytes(modrm for modrm in range(256)
                 if {0: 0, 1: 1, 2: 4, 3: 0}[modrm >> 6]
                 + (modrm >> 6 != 3 and modrm & 7 == 4) == extra)


def _padding_pattern() -> "re.Pattern":
    """Nops, int3 and zero bytes only: alignment between functions.  One regular
    expression: tens of thousands of gaps in a large library, a Python loop per byte
    cost tens of ms at the first stop.  A long nop cut short by the end counts."""
    long_nops = "|".join(
        f"[{re.escape(_nop_operands(extra)).decode('latin-1')}]"
        + (f"(?:.{{{extra}}}|.{{0,{extra}}}\\Z)" if extra else "")
        for extra in (0, 1, 2, 4, 5))
    return re.compile(f"(?:[\\x90\\xcc\\x00\\x66\\x2e]|\\x0f\\x1f(?:{long_nops}))*"
                      .encode("latin-1"), re.DOTALL)


PADDING = _padding_pattern()


def _is_padding(code: bytes) -> bool:
    """True for nops, int3 and zero bytes only: alignment between functions."""
    return PADDING.fullmatch(code) is not None


# -- .eh_frame through .eh_frame_hdr ---------------------------------------------------



def _eh_frame_ranges(elf: RawElf) -> Optional[List[Tuple[int, int]]]:
    """(start, end) of every FDE of ``.eh_frame`` (file addresses); [] without one;
    None when the table cannot be read."""
    eh_frame = elf.sections.get(".eh_frame")
    if eh_frame is None or not eh_frame["sh_size"]:
        return []
    header = elf.sections.get(".eh_frame_hdr")
    try:
        if header is not None:
            ranges = _ranges_from_header(header, eh_frame)
            if ranges is not None:
                return ranges
        return _ranges_from_pyelftools(elf.dwarf().EH_CFI_entries())
    except pyelftools_errors(ImportError):  # no pyelftools, or a table it cannot read
        return None


def _ranges_from_header(header, eh_frame) -> Optional[List[Tuple[int, int]]]:
    frames = eh_frame.data()
    index = read_search_table(header.data(), header["sh_addr"], eh_frame["sh_addr"], MAX_FDES)
    if index is None:
        return None
    # per CIE: how to read its FDEs' address range (an unpacker, its offset in the FDE)
    readers: Dict[int, Tuple] = {}
    header_of = FDE_HEADER.unpack_from
    ranges: List[Tuple[int, int]] = []
    append = ranges.append
    for start, offset in zip(*index):
        length, cie_pointer = header_of(frames, offset)
        if length == 0xFFFFFFFF:
            return None  # 64-bit DWARF: not what linkers write for x86-64
        cie = offset + 4 - cie_pointer
        reader = readers.get(cie)
        if reader is None:
            fmt = POINTER_FORMATS.get(fde_encoding(frames, cie) & 0x0F)
            if fmt is None:
                return None
            reader = readers[cie] = (struct.Struct(fmt).unpack_from, 8 + struct.calcsize(fmt))
        unpack, at = reader
        append((start, start + unpack(frames, offset + at)[0]))
    return ranges


FDE_HEADER = struct.Struct("<Ii")  # length, CIE pointer


def fde_encoding(frames: bytes, cie: int) -> int:
    """The pointer encoding a CIE's 'R' augmentation gives its FDEs (absptr without)."""
    pos = cie + 8  # length, CIE id
    version = frames[pos]
    pos += 1
    end = frames.index(b"\0", pos)
    augmentation = frames[pos:end].decode("ascii", "replace")
    pos = end + 1
    if not augmentation.startswith("z"):
        return 0
    _, pos = read_uleb(frames, pos)  # code alignment
    _, pos = read_uleb(frames, pos)  # data alignment (sleb: same length)
    if version == 1:
        pos += 1
    else:
        _, pos = read_uleb(frames, pos)
    _, pos = read_uleb(frames, pos)  # augmentation data length
    for letter in augmentation[1:]:
        if letter == "R":
            return frames[pos]
        if letter == "L":
            pos += 1
        elif letter == "P":
            fmt = POINTER_FORMATS.get(frames[pos] & 0x0F)
            if fmt is None:
                raise ValueError("personality encoding")
            pos += 1 + struct.calcsize(fmt)
        elif letter not in "SB":
            raise ValueError(f"augmentation {augmentation}")
    return 0


def _ranges_from_pyelftools(entries: Iterable) -> List[Tuple[int, int]]:
    ranges = []
    for entry in entries:
        header = getattr(entry, "header", None)
        if header is not None and "initial_location" in header:
            start = header["initial_location"]
            ranges.append((start, start + header["address_range"]))
    return ranges


def _debug_frame_ranges(elf: RawElf) -> List[Tuple[int, int]]:
    if ".debug_frame" not in elf.sections:
        return []
    try:
        return _ranges_from_pyelftools(elf.dwarf().CFI_entries())
    except pyelftools_errors(ImportError):  # no pyelftools, or a table it cannot read
        return []


def debug_files_of(path: str) -> List[str]:
    """The other files ``path``'s gaps depend on: its separate debug file, there or
    not (one installed later covers more)."""
    elf = headers_of(path)  # parsed once for all its readers
    if elf is None:
        raise ValueError(f"{path}: not an ELF file")
    debug = by_build_id(elf)
    return [debug] if debug else []


def _separate_debug_frame_ranges(elf: RawElf) -> List[Tuple[int, int]]:
    """FDEs of the separate debug file found by build id, which the debugger reads too."""
    path = by_build_id(elf)
    if path is None or not os.path.exists(path):
        return []
    try:
        with open(path, "rb") as handle:
            return _debug_frame_ranges(RawElf(handle, path))
    except FILE_ERRORS:  # an unreadable debug file, or not ELF
        return []


# -- the process's view ------------------------------------------------------------------

def nocfi_regions(path: str, mappings: Iterable) -> List[Region]:
    """Run-time ranges of the code of ``path`` without CFI, from the process's
    mappings of that file (which give its load bias).  A second mapping of the same
    file offsets elsewhere (V8 copies node's embedded builtins near its JIT code) has
    its own bias: its code is the file's code at that offset."""
    gaps = uncovered_ranges(path)
    if not gaps:
        return []
    mine = [m for m in mappings if m.path == path]
    elf = headers_of(path)
    loads = elf.loads if elf is not None else []
    main_bias = file_bias(path, mine, loads)
    if main_bias is None:
        return []
    regions = []
    for mapping in mine:
        if not mapping.executable:
            continue
        # A mapping list without file offsets (a minidump's, as LLDB lists it) says
        # offset 0 everywhere: the file's own bias then, as for its first mapping.
        bias = load_bias(mapping, loads) if mapping.offset else main_bias
        if bias is None:
            continue
        for start, end in gaps:
            low, high = max(start + bias, mapping.start), min(end + bias, mapping.end)
            if low < high:
                # owner: this mapping's load bias, for nocfi_pc.function_in()
                regions.append(Region(low, high, SOURCE, path, owner=bias))
    return regions


def function_symbols(path: str) -> List[Tuple[int, int, str]]:
    """The function symbols (file addresses) in the gaps of the file at ``path``, sorted
    (kept per file); empty when unreadable."""
    return _functions.get(path, _function_symbols, [])


def _function_symbols(path: str) -> List[Tuple[int, int, str]]:
    """Function symbols (file addresses) that lie in the file's gaps (cached on disk:
    node's 110,000 symbols cost ~40 ms to look through)."""
    return kept(path, "nocfi-functions", _read_function_symbols, _valid_functions,
                debug_files_of)


def _read_function_symbols(path: str) -> List[Tuple[int, int, str]]:
    """Function symbols (file addresses) that lie in the file's gaps.  Read with
    struct: node's .symtab holds 110,000 symbols, which pyelftools took 7 s to parse."""
    gaps = uncovered_ranges(path)
    found = []
    with open(path, "rb") as handle:
        elf = RawElf(handle, path)
        for table, strings in ((".symtab", ".strtab"), (".dynsym", ".dynstr")):
            section, names = elf.sections.get(table), elf.sections.get(strings)
            if section is None or names is None:
                continue
            data = section.data()
            names_data = None
            for name, info, _other, _index, start, size in ELF64_SYMBOL.iter_unpack(
                    data[:len(data) - len(data) % ELF64_SYMBOL.size]):
                if info & 0xF != 2 or not start:  # STT_FUNC
                    continue
                index = bisect.bisect_right(gaps, (start, float("inf"))) - 1
                if index >= 0 and start < gaps[index][1]:
                    if names_data is None:
                        names_data = names.data()
                    end = names_data.find(b"\0", name)
                    found.append((start, start + max(size, 1),
                                  names_data[name:end if end >= 0 else None]
                                  .decode("utf-8", "replace")))
            if found:
                break
    return sorted(set(found))


ELF64_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym
