"""The code without CFI around one pc of a mapped file, and the function symbol there,
found without the whole file's answer (regions/nocfi.py computes that: every FDE,
every symbol; ~0.2 s for node's 76,000 FDEs and 110,000 symbols at the first ``bt`` of
a session that has not kept it on disk).

For one file address: a binary search of ``.eh_frame_hdr``'s table and the FDEs just
before it say whether an FDE covers it and, if none does, the uncovered stretch around
it (from the end of the FDEs before to the start of the next FDE, inside its code
section), left out when it is only alignment padding, as the whole file's gaps are.
The function symbols starting in that stretch are found once per stretch (a regular
expression over the symbol table's values) and kept on disk (elf_facts.py).  The same
answers as the whole file's (tests/unit/test_nocfi_pc.py compares them at many pcs)
where the file is what linkers write: a standard search table over ``.eh_frame``.
A pc no FDE covers in a file with a ``.debug_frame`` (its own or its separate debug
file's, which may cover it) and any pc of a file without such a table are the whole
file's computation's to answer (UNKNOWN)."""

from __future__ import annotations  # annotations unevaluated: less work at the first stop

import array
import bisect
import os
import re
import struct
import sys
from typing import Dict, List, Optional, Tuple

from ..elf.debug_files import by_build_id
from ..elf.facts import kept
from ..file_cache import FileCache
from ..model import Region
from ..elf.rawelf import RawElf, file_bias, headers_of, load_bias
from ..elf.eh_frame_hdr import POINTER_FORMATS, FdeIndex, search_index
from .nocfi import (FDE_HEADER, PADDING, ELF64_SYMBOL, MAX_FDES, MAX_FILES, SKIPPED_SECTIONS,
                    SOURCE, debug_files_of, fde_encoding, function_symbols)

UNKNOWN = object()  # this file's answer needs the whole file's computation
# FDEs looked at before the pc's: one of them may reach past the pc (FDEs that overlap;
# linkers warn about them).  An FDE reaching over more than this many others is not
# seen here.
LOOK_BACK = 16
MAX_KNOWN = 4096  # answers remembered per file (FDE ranges, stretches)
MAX_NAME = 1 << 16  # bytes of one symbol name read at most

Gap = Tuple[int, int]
# (symbol table number, [(start, end, name offset)] sorted): a stretch's functions
Functions = Tuple[int, List[Tuple[int, int, int]]]


class FileCode:
    """What one file's pcs are looked up in: its code sections, its FDE table (searched
    in place) and where its symbol tables are."""

    def __init__(self, path: str):
        self.path = path
        self.exact = False  # False: UNKNOWN for every pc
        # See complete: None until asked (for a pc no FDE covers), False without FDEs.
        self._complete: Optional[bool] = False
        self._headers: Optional[RawElf] = None
        self.code: List[Tuple[int, int, int]] = []  # (start, end, file offset), sorted
        self.fdes = FdeIndex([], [])  # .eh_frame_hdr's table, searched in place
        self.frames_offset = self.frames_size = 0  # .eh_frame's place in the file
        self.symbol_tables: List[Tuple[Tuple[int, int], Tuple[int, int]]] = []
        self._readers: Dict[int, Optional[Tuple]] = {}
        # (start, end, answer) sorted: FDE ranges and padding (()), stretches (Gap),
        # so that a pc asked again (by the unwinder, then for its name) reads nothing
        self._known: List[Tuple[int, int, tuple]] = []
        self._names: Dict[Tuple[int, int], str] = {}
        self._functions: Dict[Gap, Functions] = {}
        self._symbols: Optional[List] = None
        elf = headers_of(path)
        if elf is None:
            raise ValueError(f"{path}: not an ELF file")
        self.loads = elf.loads
        self._read(elf)

    @property
    def complete(self) -> bool:
        """False when another CFI (.debug_frame, here or in the separate debug file) may
        cover what no FDE of .eh_frame does (UNKNOWN then).  Found at the first pc no
        FDE covers: most files' pcs never ask (the build id is a read of the file)."""
        if self._complete is None and self._headers is not None:  # (_read sets both)
            elf, self._headers = self._headers, None
            debug = by_build_id(elf)
            self._complete = ".debug_frame" not in elf.sections and not (
                debug is not None and os.path.exists(debug))
        return bool(self._complete)

    def _read(self, elf: RawElf) -> None:
        sections = elf.sections
        if elf.machine != 62:  # EM_X86_64: the whole file's answer is "none"
            self.exact = True
            return
        self.code = sorted(
            (s["sh_addr"], s["sh_addr"] + s["sh_size"], s["sh_offset"])
            for s in sections.values()
            if s["sh_type"] == "SHT_PROGBITS" and s["sh_flags"] & 0x4  # SHF_EXECINSTR
            and s["sh_size"] and s.name not in SKIPPED_SECTIONS
            and not s.name.startswith(".plt"))
        header, frames = sections.get(".eh_frame_hdr"), sections.get(".eh_frame")
        if not self.code:
            self.exact = True
            return
        if header is None or frames is None or not frames["sh_size"]:
            return
        self._complete, self._headers = None, elf
        try:
            fdes = search_index(header.data(), header["sh_addr"], frames["sh_addr"],
                                MAX_FDES)
        except ValueError:
            return
        if fdes is None or not fdes:
            return
        self.fdes = fdes
        self.frames_offset, self.frames_size = frames["sh_offset"], frames["sh_size"]
        for symbols, strings in ((".symtab", ".strtab"), (".dynsym", ".dynstr")):
            table_section, names = sections.get(symbols), sections.get(strings)
            if table_section is not None and names is not None:
                self.symbol_tables.append(
                    ((table_section["sh_offset"], table_section["sh_size"]),
                     (names["sh_offset"], names["sh_size"])))
        self.exact = True

    # -- the stretch without CFI around one file address ---------------------------
    def gap_at(self, address: int):
        """The (start, end) file addresses of the code without CFI holding
        ``address``, None when CFI covers it or it is no code (or only padding),
        UNKNOWN when this file's answer needs the whole computation (a pc no FDE of
        .eh_frame covers in a file with other CFI)."""
        if not self.exact:
            return UNKNOWN
        known = bisect.bisect_right(self._known, (address, float("inf"))) - 1
        if known >= 0 and address < self._known[known][1]:
            return self._known[known][2] or None
        where = bisect.bisect_right(self.code, (address, float("inf"))) - 1
        if where < 0 or address >= self.code[where][1]:
            return None
        section_start, section_end, section_offset = self.code[where]
        try:
            with open(self.path, "rb") as handle:
                gap = self._uncovered(handle, address, section_start, section_end)
                if gap is None or gap is UNKNOWN:
                    return gap
                if not self.complete:
                    return UNKNOWN
                low, high = gap
                padding = _only_padding(handle, section_offset + low - section_start,
                                        high - low)
        except (OSError, ValueError, IndexError, struct.error):
            return UNKNOWN
        if padding is None:
            return UNKNOWN
        answer = None if padding else gap
        self._remember(gap[0], gap[1], answer)
        return answer

    def _remember(self, start: int, end: int, answer: Optional[Gap]) -> None:
        if len(self._known) >= MAX_KNOWN:
            self._known.clear()
        bisect.insort(self._known, (start, end, answer or ()))

    def _uncovered(self, handle, address: int, section_start: int, section_end: int):
        """The stretch no FDE covers around ``address`` inside its section (as
        nocfi._subtract cuts it), None when an FDE covers it."""
        fdes = self.fdes
        at = fdes.before(address)
        low = section_start
        for index in range(at, max(at - LOOK_BACK, -1), -1):
            start, offset = fdes[index]
            size = self._fde_size(handle, offset)
            if size is None:
                return UNKNOWN
            end = start + size
            if end > address:
                self._remember(start, end, None)
                return None
            low = max(low, end)
        high = section_end
        if at + 1 < len(fdes):
            high = min(high, fdes[at + 1][0])
        return (low, high) if low <= address < high else None

    def _fde_size(self, handle, offset: int) -> Optional[int]:
        """The address range of the FDE at ``offset`` in .eh_frame; None when it
        cannot be read as the whole computation reads it."""
        if not 0 <= offset < self.frames_size:
            return None
        handle.seek(self.frames_offset + offset)
        fde = handle.read(32)
        length, cie_pointer = FDE_HEADER.unpack_from(fde, 0)
        if length == 0xFFFFFFFF:
            return None
        reader = self._reader(handle, offset + 4 - cie_pointer)
        if reader is None:
            return None
        unpack, at = reader
        return unpack(fde, at)[0]

    def _reader(self, handle, cie: int) -> Optional[Tuple]:
        if cie not in self._readers:
            reader = None
            if 0 <= cie < self.frames_size:
                handle.seek(self.frames_offset + cie)
                try:
                    fmt = POINTER_FORMATS.get(fde_encoding(handle.read(256), 0) & 0x0F)
                except (ValueError, IndexError):
                    fmt = None
                if fmt is not None:
                    reader = (struct.Struct(fmt).unpack_from, 8 + struct.calcsize(fmt))
            self._readers[cie] = reader
        return self._readers[cie]

    # -- the function symbols of one stretch ---------------------------------------
    def functions_in(self, gap: Gap) -> Functions:
        """(symbol table, its function symbols starting in ``gap`` as (start, end,
        name offset), sorted): the ``.symtab``'s, or the ``.dynsym``'s without one
        there.  Names are read for the symbol a pc asks about only (node's builtins
        are 2,000 symbols); kept on disk per stretch (elf_facts.py)."""
        functions = self._functions.get(gap)
        if functions is None:
            # kept as the bytes of 64-bit words (start, end, name offset, start, ...):
            # marshal reads a file's list of ints item by item, ~3 ms for node's
            number, packed = kept(self.path, f"nocfi-pc-functions-{gap[0]:x}-{gap[1]:x}",
                                  lambda _path: self._packed_functions(*gap),
                                  _valid_functions, debug_files_of)
            words = array.array("Q")
            words.frombytes(packed)
            if sys.byteorder == "big":
                words.byteswap()  # kept little-endian
            functions = self._functions[gap] = (
                number, list(zip(words[0::3], words[1::3], words[2::3])))
        return functions

    def _packed_functions(self, low: int, high: int) -> Tuple[int, bytes]:
        number, functions = self._read_functions(low, high)
        words = array.array("Q", [n for function in functions for n in function])
        if sys.byteorder == "big":
            words.byteswap()
        return number, words.tobytes()

    def _read_functions(self, low: int, high: int) -> Functions:
        with open(self.path, "rb") as handle:
            for number, (symbols, _names) in enumerate(self.symbol_tables):
                data, values = self._symbol_table(handle, number, symbols)
                unpack, size = ELF64_SYMBOL.unpack_from, ELF64_SYMBOL.size
                found = {(start, start + (length or 1), name)
                         for name, info, _other, _section, start, length in (
                             unpack(data, index * size)
                             for index in _words_between(values, low, high))
                         if info & 0xF == 2 and start and low <= start < high}  # STT_FUNC
                if found:
                    return number, sorted(found)
        return 0, []

    def _symbol_table(self, handle, number: int, symbols: Tuple[int, int]):
        """Symbol table ``number``'s bytes and its st_values as big-endian words (for
        _words_between), read once per file."""
        if self._symbols is None:
            self._symbols = [None] * len(self.symbol_tables)
        table = self._symbols[number]
        if table is None:
            offset, size = symbols
            handle.seek(offset)
            data = handle.read(size - size % ELF64_SYMBOL.size)
            data = data[:len(data) - len(data) % ELF64_SYMBOL.size]
            values = array.array("Q")
            # Elf64_Sym's words: name and info, st_value, st_size
            values.frombytes(memoryview(data).cast("Q")[1::3].tobytes())
            if sys.byteorder == "little":
                values.byteswap()
            table = self._symbols[number] = (data, values.tobytes())
        return table

    def name(self, number: int, at: int) -> str:
        """The name at offset ``at`` of symbol table ``number``'s string table."""
        name = self._names.get((number, at))
        if name is None:
            with open(self.path, "rb") as handle:
                name = _name(handle, self.symbol_tables[number][1], at)
            if len(self._names) >= MAX_KNOWN:
                self._names.clear()
            self._names[number, at] = name
        return name


def _words_between(words: bytes, low: int, high: int) -> List[int]:
    """Indexes of the big-endian 64-bit ``words`` that may lie in [low, high): those
    whose leading bytes are the range's and whose next byte is in its span (the
    caller checks the bounds).  A regular expression runs over node's 110,000
    st_values in ~2 ms, where a Python loop took ~6."""
    if high <= low:
        return []
    first, last = low.to_bytes(8, "big"), (high - 1).to_bytes(8, "big")
    same = 0
    while same < 7 and first[same] == last[same]:
        same += 1
    pattern = b"".join(b"\\x%02x" % byte for byte in first[:same])
    pattern += b"[\\x%02x-\\x%02x]" % (first[same], last[same])
    search = re.compile(pattern).search
    found = []
    match = search(words)
    while match is not None:
        at = match.start()
        if not at & 7:
            found.append(at >> 3)
        # on from the next word: a match across words must not hide the next one
        match = search(words, (at | 7) + 1)
    return found


PADDING_PROBE = 4096  # bytes of a stretch read first to tell it is not padding


def _only_padding(handle, offset: int, size: int) -> Optional[bool]:
    """True when the ``size`` bytes at ``offset`` are alignment padding only (as the
    whole file's gaps test them: PADDING.fullmatch), None when they cannot be read.
    The padding's nops decode one way from the start, so where they stop early in the
    first bytes, the whole is no padding: node's 1.6 MB of builtins are not read."""
    handle.seek(offset)
    data = handle.read(min(size, PADDING_PROBE))
    if len(data) != min(size, PADDING_PROBE):
        return None
    if size > len(data):
        match = PADDING.match(data)  # (the pattern matches no bytes too: never None)
        if match is None or match.end() < len(data) - 16:  # longer than any nop: stopped there
            return False
        data += handle.read(size - len(data))
        if len(data) != size:
            return None
    return PADDING.fullmatch(data) is not None


def _valid_functions(value) -> bool:
    return (type(value) is tuple and len(value) == 2 and type(value[0]) is int
            and type(value[1]) is bytes and len(value[1]) % 24 == 0)


def _name(handle, names: Tuple[int, int], at: int) -> str:
    offset, size = names
    if not 0 <= at < size:
        return ""
    handle.seek(offset + at)
    data = handle.read(min(256, size - at))  # most names; a longer one read again
    end = data.find(b"\0")
    if end < 0 and len(data) < min(MAX_NAME, size - at):
        handle.seek(offset + at)
        data = handle.read(min(MAX_NAME, size - at))
        end = data.find(b"\0")
    return data[:end if end >= 0 else None].decode("utf-8", "replace")


# Per file: what its pcs are looked up in (None for a file that cannot be read)
_files: FileCache[Optional[FileCode]] = FileCache(MAX_FILES)


def file_code(path: str) -> Optional[FileCode]:
    return _files.get(path, FileCode, None)


def gap_at(path: str, file_address: int):
    """The code without CFI of ``path`` holding ``file_address`` (FileCode.gap_at);
    UNKNOWN for a file that cannot be read (the whole computation claims nothing)."""
    code = file_code(path)
    return UNKNOWN if code is None else code.gap_at(file_address)


def function_at(path: str, file_address: int):
    """The function symbol (start, end, name) starting in the code without CFI that
    holds ``file_address`` and holding it: the last one starting at or before it, as
    nocfi.function_at picks; None without; UNKNOWN as gap_at."""
    code = file_code(path)
    if code is None:
        return UNKNOWN
    gap = code.gap_at(file_address)
    if gap is None or gap is UNKNOWN:
        return gap
    try:
        number, functions = code.functions_in(gap)
        index = bisect.bisect_right(functions, (file_address, float("inf"), 0)) - 1
        if index < 0 or file_address >= functions[index][1]:
            return None
        # the symbols of that start and end: the greatest name, as a sorted list has last
        start, end, _ = functions[index]
        names: List[str] = []
        while index >= 0 and functions[index][:2] == (start, end) and len(names) < 64:
            names.append(code.name(number, functions[index][2]))
            index -= 1
    except (OSError, ValueError, IndexError, struct.error):
        return UNKNOWN
    return start, end, max(names)


def file_view(path: str, mappings):
    """(FileCode, load bias of ``path``'s own mapping in ``mappings`` or None) for
    region_at: once per file and mapping list (node's are a few hundred mappings);
    UNKNOWN where the whole file's computation answers."""
    code = file_code(path)
    if code is None or not code.exact:
        return UNKNOWN
    return code, file_bias(path, [m for m in mappings if m.path == path], code.loads)


def region_at(mapping, address: int, view):
    """The Region of code without CFI holding the run-time ``address`` in ``mapping``
    (of a file), as nocfi.nocfi_regions would list it: the stretch at that mapping's
    load bias, cut to the mapping, its owner the bias; None; UNKNOWN as gap_at.
    ``view``: file_view's answer for the file."""
    if view is UNKNOWN:
        return UNKNOWN
    code, own_bias = view
    if own_bias is None:
        return None
    # A mapping list without file offsets (a minidump's) says offset 0 everywhere.
    bias = load_bias(mapping, code.loads) if mapping.offset else own_bias
    if bias is None:
        return None
    gap = code.gap_at(address - bias)
    if gap is None or gap is UNKNOWN:
        return gap
    low, high = max(gap[0] + bias, mapping.start), min(gap[1] + bias, mapping.end)
    return Region(low, high, SOURCE, mapping.path, owner=bias) if low <= address < high else None


def function_in(region: Region, address: int) -> Optional[Region]:
    """The function symbol of ``region``'s file holding ``address`` (its start, end and
    name, as a Region the prologue strategy decodes from); None without a symbol."""
    bias = region.owner
    near = function_at(region.name, address - bias)
    if near is not UNKNOWN:
        if near is None:
            return None
        start, end, name = near
        return Region(start + bias, end + bias, SOURCE, name)
    symbols = function_symbols(region.name)
    index = bisect.bisect_right(symbols, (address - bias, float("inf"), "")) - 1
    if index >= 0:
        start, end, name = symbols[index]
        if start + bias <= address < end + bias:
            return Region(start + bias, end + bias, SOURCE, name)
    return None
