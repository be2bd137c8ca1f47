"""unwind/eh_frame_hdr.py: .eh_frame_hdr's search table, on libc and on headers made
up for what it refuses (another encoding, a table too large, one cut short)."""

import struct

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.elf.rawelf import RawElf
from jit_unwind.elf.eh_frame_hdr import (SEARCH_TABLE_HEADER, read_search_table,
                                            search_index, table_words)

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def test_libc_table_gives_every_fde_start_and_where_it_is():
    with open(LIBC, "rb") as handle:
        elf = RawElf(handle, LIBC)
        header, frames = elf.sections[".eh_frame_hdr"], elf.sections[".eh_frame"]
        starts, offsets = read_search_table(header.data(), header["sh_addr"],
                                            frames["sh_addr"], 1_000_000)
    with open(LIBC, "rb") as handle:
        entries = ELFFile(handle).get_dwarf_info().EH_CFI_entries()
        fdes = sorted((entry.header["initial_location"], entry.offset) for entry in entries
                      if "initial_location" in getattr(entry, "header", {}))
    assert list(zip(starts, offsets)) == fdes and len(fdes) > 1000


def _header(pairs, encoding=SEARCH_TABLE_HEADER):
    return (encoding + struct.pack("<iI", 0, len(pairs))
            + b"".join(struct.pack("<ii", start, fde) for start, fde in pairs))


def test_made_up_tables():
    header = _header([(-0x100, 0x40), (-0x80, 0x60)])
    assert list(table_words(header, 10)) == [-0x100, 0x40, -0x80, 0x60]
    # Relative to .eh_frame_hdr (at 0x2000); FDEs as offsets in .eh_frame (at 0x1000).
    assert read_search_table(header, 0x2000, 0x1000, 10) == ([0x1F00, 0x1F80],
                                                             [0x1040, 0x1060])
    assert table_words(header, 1) is None  # more entries than believed
    assert table_words(_header([(0, 0)], bytes([1, 0x1B, 0x03, 0x33])), 10) is None
    assert table_words(header[:-1], 10) is None  # the count says more than is there
    for short in (header[:3], header[:11]):
        with pytest.raises(ValueError):
            table_words(short, 10)


def test_the_index_searches_the_tables_words_in_place():
    """search_index gives what read_search_table lists, entry by entry, and finds the
    entry before an address as a binary search of those lists does."""
    header = _header([(-0x100, 0x40), (-0x80, 0x60), (0x10, 0x90)])
    index = search_index(header, 0x2000, 0x1000, 10)
    starts, offsets = read_search_table(header, 0x2000, 0x1000, 10)
    assert list(index) == list(zip(starts, offsets)) and len(index) == 3
    assert index[1] == (0x1F80, 0x1060)
    assert [index.before(a) for a in (0x1EFF, 0x1F00, 0x1F7F, 0x1F80, 0x2010, 0x9000)] == [
        -1, 0, 0, 1, 2, 2]
    assert index.offsets_within(0x1091) and not index.offsets_within(0x1090)
    assert not search_index(header, 0x2000, 0x2050, 10).offsets_within(0x1000)  # below 0
    assert search_index(header, 0x2000, 0x1000, 2) is None
    with open(LIBC, "rb") as handle:
        elf = RawElf(handle, LIBC)
        header, frames = elf.sections[".eh_frame_hdr"], elf.sections[".eh_frame"]
        arguments = (header.data(), header["sh_addr"], frames["sh_addr"], 1_000_000)
    assert list(search_index(*arguments)) == list(zip(*read_search_table(*arguments)))
