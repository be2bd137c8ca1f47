"""Write a small ELF64 x86-64 object that names JIT code: code sections as SHT_NOBITS
at the code's absolute addresses (the bytes stay the process's), one STT_FUNC symbol per
function, and optionally ``.eh_frame``.  A debugger loads it with no offset."""

import struct
from dataclasses import dataclass
from typing import List, Sequence

ET_EXEC, EM_X86_64 = 2, 62
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
STB_GLOBAL, STT_FUNC = 1, 2
EHDR_SIZE, SHDR_SIZE, SYM_SIZE = 64, 64, 24


@dataclass(frozen=True)
class CodeSection:
    name: str
    start: int
    size: int


@dataclass(frozen=True)
class FunctionSymbol:
    name: str
    start: int
    size: int
    section: int  # index into the CodeSection list


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


def write_elf(sections: Sequence[CodeSection], symbols: Sequence[FunctionSymbol],
              eh_frame: bytes = b"") -> bytes:
    """The file's bytes.  Section indexes: 0 null, 1.. code sections, then .eh_frame
    (when given), .symtab, .strtab, .shstrtab."""
    section_names = _Strings()
    strings = _Strings()
    body = bytearray(EHDR_SIZE)
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
    symbol_table = bytearray(SYM_SIZE)  # symbol 0: the null symbol
    for symbol in symbols:
        symbol_table += struct.pack("<IBBHQQ", strings.add(symbol.name),
                                    (STB_GLOBAL << 4) | STT_FUNC, 0, symbol.section + 1,
                                    symbol.start, symbol.size)
    _align(body, 8)
    header(".symtab", SHT_SYMTAB, 0, 0, len(body), len(symbol_table), link=symtab_index + 1,
           info=1, align=8, entsize=SYM_SIZE)
    body += symbol_table
    header(".strtab", SHT_STRTAB, 0, 0, len(body), len(strings.data))
    body += strings.data
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
        "<HHIQQQIHHHHHH", ET_EXEC, EM_X86_64, 1, 0, 0, section_headers_offset, 0,
        EHDR_SIZE, 0, 0, SHDR_SIZE, len(headers), shstrtab_index)
    return bytes(body)
