"""Write a small ELF64 object (x86-64's or aarch64's ``e_machine``) that names JIT code:
code sections as SHT_NOBITS at the code's absolute addresses (the bytes stay the
process's), one STT_FUNC symbol per function, and optionally ``.eh_frame``.  A
debugger loads it with no offset."""

import itertools
import operator
import struct
import sys
from array import array
from dataclasses import dataclass
from typing import List, Optional, Sequence

from .names_for_gdb import DEBUG_ABBREV, c_units, linkage_names

ET_EXEC, EM_X86_64 = 2, 62
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
STB_GLOBAL, STT_FUNC = 1, 2
PT_LOAD, PF_X, PF_R = 1, 0x1, 0x4
EHDR_SIZE, PHDR_SIZE, SHDR_SIZE, SYM_SIZE = 64, 56, 64, 24


@dataclass(frozen=True)
class CodeSection:
    name: str
    start: int
    size: int
    count: int = 0  # how many of the file's functions (the next ones, in order) it holds


class _Strings:
    def __init__(self):
        self.data = bytearray(b"\0")
        self._index = {}

    def add(self, text: str) -> int:
        offset = self._index.get(text)
        if offset is None:
            offset = self._index[text] = len(self.data)
            self.data += text.encode("utf-8", "replace") + b"\0"
        return offset


def _align(data: bytearray, alignment: int) -> None:
    data += b"\0" * (-len(data) % alignment)


def _symbol_table(sections: Sequence[CodeSection], name_sizes: List[int],
                  starts: List[int], sizes: List[int]) -> bytes:
    """The symbol table (a null symbol first) as 64-bit words, three per symbol, filled
    by slice assignment: a perf map may name 100,000s of functions, and packing them
    one by one cost more than GDB reading them.  ``name_sizes``: each name's length
    with its NUL, in .strtab order (which starts with the empty name)."""
    info = (STB_GLOBAL << 4) | STT_FUNC
    first_words = array("Q")
    position, name_offset = 0, 1
    for index, section in enumerate(sections, 1):
        if section.count <= 0:
            continue
        end = position + section.count
        # st_name | st_info << 32 | st_other << 40 | st_shndx << 48: a running sum of
        # the name sizes started from the section's constant bits.
        first_words.extend(itertools.accumulate(
            name_sizes[position:end - 1], initial=name_offset | (info << 32) | (index << 48)))
        name_offset += sum(name_sizes[position:end])
        position = end
    table = array("Q", bytes(SYM_SIZE * (len(starts) + 1)))
    table[3::3] = first_words
    table[4::3] = array("Q", starts)
    table[5::3] = array("Q", sizes)
    if sys.byteorder != "little":
        table.byteswap()
    return table.tobytes()


def write_elf(sections: Sequence[CodeSection], functions: Sequence,
              eh_frame: bytes = b"", starts: Optional[List[int]] = None,
              ends: Optional[List[int]] = None, machine: int = EM_X86_64,
              names_for_gdb: bool = False) -> bytes:
    """The file's bytes: one global STT_FUNC symbol per function (anything with
    ``name``, ``start``, ``end``), ``sections[0].count`` of them in the first code
    section, the next ``sections[1].count`` in the second, and so on.  Section indexes:
    0 null, 1.. code sections, then .eh_frame (when given), the DWARF sections (with
    ``names_for_gdb``), .symtab, .strtab, .shstrtab.  ``starts`` and ``ends``: the
    functions' when the caller has them.  ``names_for_gdb``: names GDB prints as
    written (names_for_gdb.py)."""
    section_names = _Strings()
    # One PT_LOAD (no file bytes) per code section: LLDB takes a module's base address
    # and size from its first PT_LOAD, and its core writer refuses a module without one.
    body = bytearray(EHDR_SIZE) + b"".join(
        struct.pack("<IIQQQQQQ", PT_LOAD, PF_R | PF_X, 0, section.start, section.start, 0,
                    section.size, 16) for section in sections)
    headers: List[bytes] = [bytes(SHDR_SIZE)]

    def header(name, kind, flags, address, offset, size, link=0, info=0, align=1, entsize=0):
        headers.append(struct.pack("<IIQQQQIIQQ", section_names.add(name), kind, flags,
                                   address, offset, size, link, info, align, entsize))

    for section in sections:
        header(section.name, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, section.start,
               len(body), section.size, align=16)
    if eh_frame:
        _align(body, 8)
        header(".eh_frame", SHT_PROGBITS, 0, 0, len(body), len(eh_frame), align=8)
        body += eh_frame
    # List comprehensions: faster than map(attrgetter) over 10,000s of functions.
    names = [f.name or f"[jit {f.start:#x}]" for f in functions]
    if starts is None or ends is None:
        starts = [f.start for f in functions]
        sizes = [f.end - f.start for f in functions]
    else:
        sizes = list(map(operator.sub, ends, starts))
    prefixes: List[int] = []
    if names_for_gdb:
        names, prefixes = linkage_names(names)
    joined = "\0".join(names)
    if joined.isascii():  # the usual case: sizes from the names' lengths
        encoded = joined.encode("ascii")
        name_sizes = list(map((1).__add__, map(len, names)))
    else:
        parts = [name.encode("utf-8", "replace") for name in names]
        encoded = b"\0".join(parts)
        name_sizes = list(map((1).__add__, map(len, parts)))
    string_table = b"\0" + encoded + b"\0" if names else b"\0"
    symbol_table = _symbol_table(sections, name_sizes, starts, sizes)
    if any(prefixes):
        name_offsets = list(itertools.accumulate(name_sizes, initial=1))
        for name, data in ((".debug_abbrev", DEBUG_ABBREV),
                           (".debug_info", c_units(name_offsets, prefixes, starts, sizes)),
                           (".debug_str", string_table)):
            header(name, SHT_PROGBITS, 0, 0, len(body), len(data))
            body += data
    symtab_index = len(headers)
    _align(body, 8)
    header(".symtab", SHT_SYMTAB, 0, 0, len(body), len(symbol_table), link=symtab_index + 1,
           info=1, align=8, entsize=SYM_SIZE)
    body += symbol_table
    header(".strtab", SHT_STRTAB, 0, 0, len(body), len(string_table))
    body += string_table
    shstrtab_index = len(headers)
    section_names.add(".shstrtab")
    header(".shstrtab", SHT_STRTAB, 0, 0, len(body), len(section_names.data))
    body += section_names.data
    _align(body, 8)
    section_headers_offset = len(body)
    for entry in headers:
        body += entry
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, SysV
    body[:EHDR_SIZE] = ident + struct.pack(
        "<HHIQQQIHHHHHH", ET_EXEC, machine, 1, 0, EHDR_SIZE if sections else 0,
        section_headers_offset, 0, EHDR_SIZE, PHDR_SIZE, len(sections), SHDR_SIZE,
        len(headers), shstrtab_index)
    return bytes(body)
