"""CPython 3.15's JIT executors, read from made-up memory (no 3.15 build exists here).

3.15 keeps frame pointers in JIT code, enters every trace through one shared shim
(``_Py_jit_entry``: no ``jit_side_entry`` per executor, ``jit_code`` is the start of
the trace) and registers its code through GDB's JIT interface.  The memory below holds
a runtime, one interpreter and an executor list laid out as
``EXECUTOR_LAYOUTS[(3, 15)]`` says, the way the 3.14 probe test in
test_cpython_executors.py fakes them.
"""

import struct
from typing import Dict, List

import pytest

from jit_unwind.cpython.code import CodeInfo
from jit_unwind.cpython.errors import ObjectError
from jit_unwind.cpython.executors import EXECUTOR_LAYOUTS, ExecutorList, read_executors
from jit_unwind.cpython.version import PyVersion
from jit_unwind.model import Region
from jit_unwind.naming import jit_frame_name
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.cpython_jit import REGION_SOURCE, executor_regions
from jit_unwind.target import BytesMemory

LAYOUT = EXECUTOR_LAYOUTS[(3, 15)]

EXECUTOR_TYPE, EXECUTOR_TYPE_NAME = 0x10000, 0x11000
ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR = 0x20000, 0x20100
SYMBOLS = {"PyExc_AssertionError": 0x30000, "PyExc_NotImplementedError": 0x30008}
INTERP = 0x100000
CONSTS = 0x2B1C8                          # PyInterpreterState.common_consts
HEAD_OFFSET = CONSTS + 8 * 5 + 8          # after common_consts[5] and bool jit

# Executors, in list order: (address, next, code object, jit_code, jit_size, exits).
LOOP, COUNT, SIDE, IDLE = 0x200000, 0x200400, 0x200800, 0x200C00
LOOP_CODE, COUNT_CODE = 0x300000, 0x300400
LOOP_JIT, COUNT_JIT, SIDE_JIT = 0x7F1234560000, 0x7F1234550000, 0x7F1234562000
EXECUTORS = (
    (LOOP, COUNT, LOOP_CODE, LOOP_JIT, 0x2000, [SIDE]),
    (COUNT, SIDE, COUNT_CODE, COUNT_JIT, 0x1000, []),
    # A side-exit executor: no code object of its own, LOOP's exit leads to it.
    (SIDE, IDLE, 0, SIDE_JIT, 0x1000, []),
    # Linked but never compiled (tier-2 interpreter only): skipped.
    (IDLE, 0, COUNT_CODE, 0, 0, []),
)
CODES = {
    LOOP_CODE: CodeInfo(LOOP_CODE, "run", "Loop.run", "/app/loop.py", 12, b"",
                        LOOP_CODE + 200, 40),
    COUNT_CODE: CodeInfo(COUNT_CODE, "count_down", "count_down", "/app/count.py", 3,
                         b"", COUNT_CODE + 200, 20),
}


class _TypeFields:
    ob_type = 8
    tp_name = 24


class _Codes:
    def __init__(self, codes: Dict[int, CodeInfo]):
        self._codes = codes

    def read(self, address: int) -> CodeInfo:
        if address not in self._codes:
            raise ObjectError(f"no code object at {address:#x}")
        return self._codes[address]


class _FakeRuntime:
    """What read_executors uses of a CPythonRuntime: version, layout (ob_type,
    tp_name), the interpreter list and a code reader."""

    def __init__(self, interp: int, codes: Dict[int, CodeInfo]):
        self.version = PyVersion(3, 15, 0, 0xA, 3)
        self.layout = _TypeFields()
        self.codes = _Codes(codes)
        self._interp = interp

    def interpreter_addresses(self):
        return [self._interp], ""


def _object(type_address: int, size: int) -> bytearray:
    """``size`` bytes starting with a PyObject header (refcount 1, ``type_address``)."""
    data = bytearray(size)
    struct.pack_into("<QQ", data, 0, 1, type_address)
    return data


def _executor_record(following: int, previous: int, code: int, jit_code: int,
                     jit_size: int, exits: List[int]) -> bytes:
    record = _object(EXECUTOR_TYPE, max(LAYOUT.executor_size,
                                        LAYOUT.exits + len(exits) * LAYOUT.exit_size))
    struct.pack_into("<QQQ", record, LAYOUT.links_next, following, previous, code)
    struct.pack_into("<I", record, LAYOUT.exit_count, len(exits))
    struct.pack_into("<QQ", record, LAYOUT.jit_size, jit_size, jit_code)
    byte, mask = LAYOUT.linked
    record[byte] |= mask
    for index, target in enumerate(exits):
        struct.pack_into("<Q", record, LAYOUT.exits + index * LAYOUT.exit_size
                         + LAYOUT.exit_executor, target)
    return bytes(record)


def _segments() -> Dict[int, bytes]:
    segments: Dict[int, bytes] = {}
    type_object = _object(EXECUTOR_TYPE, 64)
    struct.pack_into("<Q", type_object, _TypeFields.tp_name, EXECUTOR_TYPE_NAME)
    segments[EXECUTOR_TYPE] = bytes(type_object)
    segments[EXECUTOR_TYPE_NAME] = b"uop_executor\0"
    segments[SYMBOLS["PyExc_AssertionError"]] = struct.pack(
        "<QQ", ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR)
    body = bytearray(0x30000)
    struct.pack_into("<QQ", body, CONSTS, ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR)
    struct.pack_into("<Q", body, CONSTS + 8 * 5, 1)  # bool jit
    struct.pack_into("<Q", body, HEAD_OFFSET, EXECUTORS[0][0])
    segments[INTERP] = bytes(body)
    previous = 0
    for address, following, code, jit_code, jit_size, exits in EXECUTORS:
        segments[address] = _executor_record(following, previous, code, jit_code,
                                             jit_size, exits)
        previous = address
    return segments


@pytest.fixture
def executors() -> ExecutorList:
    result = read_executors(BytesMemory(_segments()), _FakeRuntime(INTERP, CODES),
                            lookup=SYMBOLS.get)
    assert result.stop_reason == ""
    return result


def test_the_315_layout_has_no_side_entry():
    assert LAYOUT.jit_side_entry is None
    assert LAYOUT.interp_list_head is None and LAYOUT.common_consts == 5
    # exits[] follows jit_code directly, where 3.14 keeps jit_side_entry.
    assert LAYOUT.exits == LAYOUT.jit_code + 8


def test_read_executors_finds_every_compiled_executor(executors):
    assert executors.list_heads == ((INTERP, HEAD_OFFSET),)
    assert executors.skipped == 1
    assert [(e.address, e.jit_code, e.jit_size, e.code_address, e.qualname, e.filename,
             e.firstlineno, e.parent, e.kind, e.error) for e in executors] == [
        (COUNT, COUNT_JIT, 0x1000, COUNT_CODE, "count_down", "/app/count.py", 3, None,
         "trace", ""),
        (LOOP, LOOP_JIT, 0x2000, LOOP_CODE, "Loop.run", "/app/loop.py", 12, None,
         "trace", ""),
        (SIDE, SIDE_JIT, 0x1000, LOOP_CODE, "Loop.run", "/app/loop.py", 12, LOOP,
         "trace", ""),
    ]


def test_no_executor_has_a_shim(executors):
    for executor in executors:
        assert executor.has_shim is False
        assert executor.shim_end == executor.jit_code
        assert not executor.in_shim(executor.jit_code)
        assert executors.find(executor.jit_code) is executor
        assert executors.find(executor.end - 1) is executor
    # LOOP and its side exit are neighbours (one merged mapping): each keeps its pages.
    assert LOOP_JIT + 0x2000 == SIDE_JIT
    assert executors.find(SIDE_JIT - 1).address == LOOP
    assert executors.find(SIDE_JIT).address == SIDE


def test_dwarf_offsets_need_no_symbols():
    layout = LAYOUT.with_offsets("DWARF", interp_list_head=HEAD_OFFSET)
    result = read_executors(BytesMemory(_segments()), _FakeRuntime(INTERP, CODES),
                            layout=layout)
    assert result.stop_reason == ""
    assert [e.address for e in result] == [COUNT, LOOP, SIDE]


def test_regions_are_one_trace_per_executor(executors):
    regions = executor_regions(executors)
    assert [(r.start, r.end, r.source, r.name, r.kind, r.owner) for r in regions] == [
        (COUNT_JIT, COUNT_JIT + 0x1000, REGION_SOURCE,
         "[jit] count_down (/app/count.py:3) trace 0x7f1234550000", "trace", COUNT_CODE),
        (LOOP_JIT, LOOP_JIT + 0x2000, REGION_SOURCE,
         "[jit] Loop.run (/app/loop.py:12) trace 0x7f1234560000", "trace", LOOP_CODE),
        (SIDE_JIT, SIDE_JIT + 0x1000, REGION_SOURCE,
         "[jit] Loop.run (/app/loop.py:12) trace 0x7f1234562000", "trace", LOOP_CODE),
    ]
    assert REGION_SOURCE == "cpython-jit"


def _region_maps(executors: ExecutorList) -> List[RegionMap]:
    """The same regions put together the three ways the plugin can: the executor
    regions and GDB's registered entries in one add_symbols call, registered entries
    first, or passed to the constructor."""
    mappings = [Mapping(COUNT_JIT, COUNT_JIT + 0x1000, "r-xp"),
                Mapping(LOOP_JIT, SIDE_JIT + 0x1000, "r-xp")]
    # 3.15 registers each trace with GDB's JIT interface: GDB then knows the code.
    registered = [Region(LOOP_JIT, LOOP_JIT + 0x2000, "gdb-jit", "jit_trace_0"),
                  Region(SIDE_JIT, SIDE_JIT + 0x1000, "gdb-jit", "jit_trace_1")]
    named = executor_regions(executors)
    together = RegionMap(mappings)
    together.add_symbols(named + registered)
    registered_first = RegionMap(mappings)
    registered_first.add_symbols(registered)
    registered_first.add_symbols(named)
    constructed = RegionMap(mappings, symbols=named, registered=registered)
    return [together, registered_first, constructed]


@pytest.mark.parametrize("pc, name", [
    (LOOP_JIT, "[jit] Loop.run (/app/loop.py:12) trace 0x7f1234560000"),
    (LOOP_JIT + 0x1FFF, "[jit] Loop.run (/app/loop.py:12) trace 0x7f1234560000"),
    (SIDE_JIT + 0x10, "[jit] Loop.run (/app/loop.py:12) trace 0x7f1234562000"),
])
def test_registered_code_is_left_to_gdb_but_keeps_the_python_name(executors, pc, name):
    for regions in _region_maps(executors):
        assert regions.jit_region_at(pc) is not None
        assert regions.is_registered(pc) is True      # the unwinder returns None
        symbol = regions.symbol_at(pc)
        assert (symbol.source, symbol.name, symbol.kind) == (REGION_SOURCE, name, "trace")
        assert jit_frame_name(regions, pc, innermost=True) == name
        assert jit_frame_name(regions, pc + 1) == name  # a return address: pc - 1
        assert name in [r.name for r in regions.listing()]


def test_unregistered_executor_code_is_not_left_to_gdb(executors):
    for regions in _region_maps(executors):
        pc = COUNT_JIT + 0x80
        assert regions.is_registered(pc) is False
        assert regions.symbol_at(pc).name == (
            "[jit] count_down (/app/count.py:3) trace 0x7f1234550000")
    # Next to a registered region, outside it: not registered.
    assert not _region_maps(executors)[0].is_registered(LOOP_JIT - 1)
