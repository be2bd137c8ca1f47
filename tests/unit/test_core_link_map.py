"""The mapped files of a core without NT_FILE, from the auxv and the dynamic linker's
list, over memory laid out as the process had it (a real executable and libc): a
cyclic list ends, memory the core lacks leaves out what it would have said, and another
build of the program gives no list at all."""

import struct
from pathlib import Path

from elftools.elf.elffile import ELFFile

from jit_unwind.regions.core_link_map import (AT_ENTRY, AT_EXECFN, AT_PHDR, DT_DEBUG,
                                              last_library, mapped_files)
from tests.support import fixture_binary

BIAS = 0x555555554000
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBC_BASE = 0x7F0000000000
EXECFN, R_DEBUG, FIRST, SECOND, NAMES = 0x7000000, 0x7100000, 0x7200000, 0x7201000, 0x7300000


def _program(path: Path):
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        segments = {s["p_type"]: (s["p_vaddr"], s["p_memsz"]) for s in elf.iter_segments()}
        loads = [(s["p_vaddr"], s["p_filesz"], s["p_offset"]) for s in elf.iter_segments()
                 if s["p_type"] == "PT_LOAD"]
        return elf.header["e_entry"], segments, loads


def _memory(program: Path, with_dynamic: bool = True):
    """{address: bytes} of the process: AT_EXECFN's string, the program's .dynamic, the
    dynamic linker's r_debug and a two-object link_map whose last l_next points back."""
    entry, segments, _loads = _program(program)
    dynamic = segments["PT_DYNAMIC"][0] + BIAS
    blocks = {
        EXECFN: str(program).encode() + b"\0",
        R_DEBUG: struct.pack("<QQ", 1, FIRST),
        FIRST: struct.pack("<QQQQ", BIAS, NAMES, 0, SECOND),  # the program: l_name ""
        SECOND: struct.pack("<QQQQ", LIBC_BASE, NAMES + 8, 0, FIRST),  # a cycle
        NAMES: b"\0" * 8 + LIBC.encode() + b"\0",
    }
    if with_dynamic:
        blocks[dynamic] = struct.pack("<QQQQ", DT_DEBUG, R_DEBUG, 0, 0)
    auxv = [(AT_PHDR, BIAS + segments["PT_PHDR"][0]), (AT_ENTRY, BIAS + entry),
            (AT_EXECFN, EXECFN)]

    def read(address, size):
        for start, data in blocks.items():
            if start <= address < start + len(data):
                return data[address - start:address - start + size]
        return None

    return read, auxv


def _expected(path, base):
    _entry, _segments, loads = _program(path)
    return [((base + vaddr) & ~0xFFF, (base + vaddr + filesz + 0xFFF) & ~0xFFF, str(path),
             offset & ~0xFFF) for vaddr, filesz, offset in loads if filesz]


def test_the_program_and_the_listed_libraries_where_they_were_loaded():
    program = fixture_binary("toyjit")
    read, auxv = _memory(program)
    entries = mapped_files(read, auxv)
    assert entries == sorted(_expected(program, BIAS) + _expected(LIBC, LIBC_BASE))
    assert last_library(read, auxv) == LIBC


def test_without_the_dynamic_section_only_the_program():
    program = fixture_binary("toyjit")
    read, auxv = _memory(program, with_dynamic=False)
    assert mapped_files(read, auxv) == _expected(program, BIAS)
    assert last_library(read, auxv) is None


def test_another_build_of_the_program_gives_no_list():
    program = fixture_binary("toyjit")
    read, auxv = _memory(program)
    moved = [(key, value + 0x10 if key == AT_ENTRY else value) for key, value in auxv]
    assert mapped_files(read, moved) == []
    assert mapped_files(lambda address, size: None, []) == []
