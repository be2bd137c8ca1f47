"""Write a small ELF64 x86-64 object that names JIT code: code sections as SHT_NOBITS
at the code's absolute addresses (the bytes stay the process's), one STT_FUNC symbol per
function, and optionally ``.eh_frame``.  A debugger loads it with no offset."""

import itertools
import struct
from operator import attrgetter
from dataclasses import dataclass
from typing import List, Sequence

ET_EXEC, EM_X86_64 = 2, 62
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
STB_GLOBAL, STT_FUNC = 1, 2
PT_LOAD, PF_X, PF_R = 1, 0x1, 0x4
EHDR_SIZE, PHDR_SIZE, SHDR_SIZE, SYM_SIZE = 64, 56, 64, 24
_SYMBOL = struct.Struct("<IBBHQQ")


@dataclass(frozen=True)
class CodeSection:
    name: str
    start: int
    size: int


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


def write_elf(sections: Sequence[CodeSection], functions: Sequence, section_of: Sequence[int],
              eh_frame: bytes = b"") -> bytes:
    """The file's bytes: one global STT_FUNC symbol per function (anything with
    ``name``, ``start``, ``end``) in code section ``section_of[i]``.  Section indexes:
    0 null, 1.. code sections, then .eh_frame (when given), .symtab, .strtab,
    .shstrtab."""
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
    symtab_index = len(headers)
    names = [f.name or f"[jit {f.start:#x}]" for f in functions]
    joined = "\0".join(names)
    if joined.isascii():  # the usual case: offsets from the names' lengths
        encoded = joined.encode("ascii")
        lengths = map(len, names)
    else:
        parts = [name.encode("utf-8", "replace") for name in names]
        encoded = b"\0".join(parts)
        lengths = map(len, parts)
    count = len(names)
    name_offsets = itertools.accumulate(itertools.islice((n + 1 for n in lengths),
                                                         max(count - 1, 0)), initial=1)
    string_table = b"\0" + encoded + b"\0" if names else b"\0"
    starts = list(map(attrgetter("start"), functions))
    ends = map(attrgetter("end"), functions)
    # Packed by map() over C-level iterators: a perf map may name 100,000s of functions.
    symbol_table = bytes(SYM_SIZE) + b"".join(map(
        _SYMBOL.pack, name_offsets, itertools.repeat((STB_GLOBAL << 4) | STT_FUNC),
        itertools.repeat(0), map((1).__add__, section_of), starts,
        map(int.__sub__, ends, starts)))
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
        "<HHIQQQIHHHHHH", ET_EXEC, EM_X86_64, 1, 0, EHDR_SIZE if sections else 0,
        section_headers_offset, 0, EHDR_SIZE, PHDR_SIZE, len(sections), SHDR_SIZE,
        len(headers), shstrtab_index)
    return bytes(body)
