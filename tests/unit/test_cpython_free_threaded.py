"""What free-threaded builds change in the objects read: the string state's shape
(3.14t: ``interned`` is a whole byte) and the per-thread copies of the bytecode (3.14t:
``co_tlbc->entries[frame->tlbc_index]``).  Real processes: test_cpython_runtime.py and
tests/e2e/test_free_threaded.py."""

import struct

import pytest

from jit_unwind.cpython.code import CodeInfo, CodeReader
from jit_unwind.cpython.objects import unicode_state_bits
from jit_unwind.target import BytesMemory

INTERNED, KIND_1, COMPACT, ASCII = 1, 1, 1, 1
BIT_FIELDS = INTERNED | KIND_1 << 2 | COMPACT << 5 | ASCII << 6    # GIL builds, 3.13t
INTERNED_BYTE = INTERNED | KIND_1 << 8 | COMPACT << 11 | ASCII << 12  # 3.14t


@pytest.mark.parametrize("free_threaded", [False, True])
def test_bit_field_strings_read_alike_in_every_build(free_threaded):
    assert unicode_state_bits(BIT_FIELDS, free_threaded) == (1, 1, 1)
    assert unicode_state_bits(2 << 2 | COMPACT << 5, free_threaded) == (2, 1, 0)


def test_an_interned_byte_moves_the_other_fields_in_free_threaded_builds_only():
    assert unicode_state_bits(INTERNED_BYTE, True) == (1, 1, 1)
    assert unicode_state_bits(4 << 8 | COMPACT << 11, True) == (4, 1, 0)
    assert unicode_state_bits(INTERNED_BYTE, False)[0] == 0  # refused as kind 0


CODE, TLBC = 0x10000, 0x20000
COPIES = [CODE + 200, 0x30000, 0x40000]


def code_with_copies(tlbc=TLBC):
    memory = BytesMemory({TLBC: struct.pack("<q3Q", len(COPIES), *COPIES)})
    code = CodeInfo(CODE, "f", "f", "f.py", 1, b"", CODE + 200, 10, tlbc)
    return CodeReader(memory, None), code


def test_a_frame_runs_the_copy_its_tlbc_index_names():
    reader, code = code_with_copies()
    assert [reader.bytecode_start(code, index) for index in range(3)] == COPIES
    assert code.contains(0x30000 + 18, COPIES[1]) and not code.contains(0x30000 + 20,
                                                                         COPIES[1])


@pytest.mark.parametrize("index", [3, -1, 1 << 40])
def test_an_index_outside_the_array_gives_no_bytecode(index):
    reader, code = code_with_copies()
    assert reader.bytecode_start(code, index) is None


def test_without_copies_only_index_0_is_known():
    reader, code = code_with_copies(tlbc=0)
    assert reader.bytecode_start(code, 0) == code.code_start
    assert reader.bytecode_start(code, 1) is None
