"""PageCache: one stop's small reads served from whole pages read once, with the same
bytes and the same errors as the memory under it."""

import struct

import pytest

from jit_unwind.cpython.objects import StructReader, read_struct
from jit_unwind.target import BytesMemory, MemoryReadError, PageCache


class CountingMemory(BytesMemory):
    def __init__(self, segments):
        super().__init__(segments)
        self.reads = []

    def read(self, address, size):
        self.reads.append((address, size))
        return super().read(address, size)


def test_reads_in_one_page_cost_one_read_and_give_the_same_bytes():
    data = bytes(range(256)) * 32  # two pages
    memory = CountingMemory({0x10000: data})
    cached = PageCache(memory)
    for address in range(0x10000, 0x11000 - 8, 24):
        assert cached.read(address, 8) == data[address - 0x10000:address - 0x10000 + 8]
    assert memory.reads == [(0x10000, 4096)]


def test_a_read_across_pages_is_passed_on():
    data = bytes(range(256)) * 32
    memory = CountingMemory({0x10000: data})
    assert PageCache(memory).read(0x10ffc, 8) == data[0xffc:0x1004]
    assert memory.reads == [(0x10ffc, 8)]


def test_a_page_readable_only_in_part_is_read_piecewise():
    memory = CountingMemory({0x10100: b"\x01" * 64})  # not a whole page
    cached = PageCache(memory)
    assert cached.read(0x10108, 8) == b"\x01" * 8
    assert cached.read(0x10110, 8) == b"\x01" * 8
    with pytest.raises(MemoryReadError):
        cached.read(0x10000, 8)
    # the page was tried once, then each read went to the memory itself
    assert memory.reads.count((0x10000, 4096)) == 1


@pytest.mark.parametrize("fields", [
    {"previous": (8, "Q"), "executable": (0, "Q"), "owner": (78, "b"), "index": (72, "i")},
    {"whole": (0, "Q"), "low": (0, "I"), "flag": (4, "?")},  # overlapping fields
    {"only": (16, "q")},
])
def test_struct_reader_reads_each_field_at_its_offset(fields):
    raw = bytes(range(96))
    memory = BytesMemory({0x2000: raw})
    expected = {name: struct.unpack_from("<" + fmt, raw, offset)[0]
                for name, (offset, fmt) in fields.items()}
    assert dict(zip(fields, StructReader(fields).read(memory, 0x2000))) == expected
    assert read_struct(memory, 0x2000, fields) == expected
