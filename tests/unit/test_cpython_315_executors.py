"""CPython 3.15's JIT executors, read from made-up memory laid out as 3.15.0rc2 has
them (EXECUTOR_LAYOUTS[(3, 15)], checked with ``ptype /o`` on that build; the e2e
tests read the real ones).

3.15 keeps its executors in an array, ``PyInterpreterState.executor_ptrs``, plus a
deletion list and two cold executors; it enters every trace through one function of
the interpreter (``_PyJIT_Entry``: no ``jit_side_entry``, ``jit_code`` is the start of
the trace) and registers each trace through GDB's JIT interface.
"""

import struct
from typing import Dict, List

import pytest

from jit_unwind.cpython.code import CodeInfo
from jit_unwind.cpython.errors import ObjectError
from jit_unwind.cpython.executors import EXECUTOR_LAYOUTS, ExecutorList, read_executors
from jit_unwind.cpython.version import PyVersion
from jit_unwind.model import Region
from jit_unwind.stack.naming import jit_frame_name
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.cpython_jit import REGION_SOURCE, executor_regions
from jit_unwind.target import BytesMemory

LAYOUT = EXECUTOR_LAYOUTS[(3, 15)]

EXECUTOR_TYPE, EXECUTOR_TYPE_NAME = 0x10000, 0x11000
ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR = 0x20000, 0x20100
SYMBOLS = {"PyExc_AssertionError": 0x30000, "PyExc_NotImplementedError": 0x30008}
INTERP = 0x100000
DECOY = 0x1000                            # the two exceptions, but no array after them
CONSTS = 0x36850                          # PyInterpreterState.common_consts (rc2)
ARRAY = CONSTS + 0x80                     # executor_ptrs (0x368d0 on rc2)
POINTERS = 0x180000

# Executors in array order: (address, code object, jit_code, jit_size, exits).
LOOP, COUNT, SIDE, IDLE = 0x200000, 0x200400, 0x200800, 0x200C00
DEAD, COLD, COLD_DYNAMIC = 0x201000, 0x201400, 0x201800
LOOP_CODE, COUNT_CODE = 0x300000, 0x300400
LOOP_JIT, COUNT_JIT, SIDE_JIT = 0x7F1234560000, 0x7F1234550000, 0x7F1234562000
DEAD_JIT, COLD_JIT, COLD_DYNAMIC_JIT = 0x7F1234540000, 0x7F1234570000, 0x7F1234571000
EXECUTORS = (
    (LOOP, LOOP_CODE, LOOP_JIT, 0x2000, [SIDE]),
    (COUNT, COUNT_CODE, COUNT_JIT, 0x1000, []),
    # A side-exit executor: no code object of its own, LOOP's exit leads to it.
    (SIDE, 0, SIDE_JIT, 0x1000, []),
    # Never compiled (tier-2 interpreter only): skipped.
    (IDLE, COUNT_CODE, 0, 0, []),
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


def _executor_record(slot: int, following: int, code: int, jit_code: int,
                     jit_size: int, exits: List[int]) -> bytes:
    record = _object(EXECUTOR_TYPE, max(LAYOUT.executor_size,
                                        LAYOUT.exits + len(exits) * LAYOUT.exit_size))
    struct.pack_into("<i", record, LAYOUT.array_index, slot)
    struct.pack_into("<QQQ", record, LAYOUT.links_next, following, 0, code)
    struct.pack_into("<I", record, LAYOUT.exit_count, len(exits))
    struct.pack_into("<QQ", record, LAYOUT.jit_size, jit_size, jit_code)
    for index, target in enumerate(exits):
        struct.pack_into("<Q", record, LAYOUT.exits + index * LAYOUT.exit_size
                         + LAYOUT.exit_executor, target)
    return bytes(record)


def _segments(count: int = len(EXECUTORS)) -> Dict[int, bytes]:
    segments: Dict[int, bytes] = {}
    type_object = _object(EXECUTOR_TYPE, 64)
    struct.pack_into("<Q", type_object, _TypeFields.tp_name, EXECUTOR_TYPE_NAME)
    segments[EXECUTOR_TYPE] = bytes(type_object)
    segments[EXECUTOR_TYPE_NAME] = b"uop_executor\0"
    segments[SYMBOLS["PyExc_AssertionError"]] = struct.pack(
        "<QQ", ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR)
    body = bytearray(0x40000)
    # An earlier copy of the two exceptions: no array where one would follow.
    struct.pack_into("<QQ", body, DECOY, ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR)
    struct.pack_into("<QQ", body, CONSTS, ASSERTION_ERROR, NOT_IMPLEMENTED_ERROR)
    body[CONSTS + 8 * 12] = 1  # bool jit
    # executor_ptrs, executor_count, executor_capacity, executor_deletion_list_head,
    # cold_executor, cold_dynamic_executor
    struct.pack_into("<6Q", body, ARRAY, POINTERS, count, 8, DEAD, COLD, COLD_DYNAMIC)
    segments[INTERP] = bytes(body)
    segments[POINTERS] = struct.pack(f"<{count}Q", *(e[0] for e in EXECUTORS[:count]))
    for slot, (address, code, jit_code, jit_size, exits) in enumerate(EXECUTORS):
        segments[address] = _executor_record(slot, 0, code, jit_code, jit_size, exits)
    # Invalidated while a trace of it may still run: on the deletion list, slot -1.
    segments[DEAD] = _executor_record(-1, 0, COUNT_CODE, DEAD_JIT, 0x1000, [])
    segments[COLD] = _executor_record(-1, 0, 0, COLD_JIT, 0x1000, [])
    segments[COLD_DYNAMIC] = _executor_record(-1, 0, 0, COLD_DYNAMIC_JIT, 0x1000, [])
    return segments


@pytest.fixture
def executors() -> ExecutorList:
    result = read_executors(BytesMemory(_segments()), _FakeRuntime(INTERP, CODES),
                            lookup=SYMBOLS.get)
    assert result.stop_reason == ""
    return result


def test_the_315_layout_is_an_array_without_side_entry():
    assert LAYOUT.jit_side_entry is None and LAYOUT.uses_array
    assert LAYOUT.interp_list_head is None and LAYOUT.common_consts == 12
    assert LAYOUT.array_fields(CONSTS) == (ARRAY, ARRAY + 8, ARRAY + 0x18, ARRAY + 0x20,
                                           ARRAY + 0x28)


EXPECTED = [
    (DEAD, DEAD_JIT, 0x1000, COUNT_CODE, "count_down", "/app/count.py", 3, None, "trace"),
    (COUNT, COUNT_JIT, 0x1000, COUNT_CODE, "count_down", "/app/count.py", 3, None,
     "trace"),
    (LOOP, LOOP_JIT, 0x2000, LOOP_CODE, "Loop.run", "/app/loop.py", 12, None, "trace"),
    (SIDE, SIDE_JIT, 0x1000, LOOP_CODE, "Loop.run", "/app/loop.py", 12, LOOP, "trace"),
    (COLD, COLD_JIT, 0x1000, 0, "<cold exit>", "", None, None, "cold-exit"),
    (COLD_DYNAMIC, COLD_DYNAMIC_JIT, 0x1000, 0, "<cold dynamic exit>", "", None, None,
     "cold-exit"),
]


def _summary(executors):
    return [(e.address, e.jit_code, e.jit_size, e.code_address, e.qualname, e.filename,
             e.firstlineno, e.parent, e.kind) for e in executors]


def test_read_executors_finds_every_compiled_executor(executors):
    # The array found after common_consts, not after the decoy.
    assert executors.list_heads == ((INTERP, ARRAY),)
    assert executors.skipped == 1
    assert _summary(executors) == EXPECTED
    assert all(e.error == "" for e in executors)


def test_an_array_whose_slots_disagree_is_not_believed():
    segments = _segments()
    pointers = bytearray(segments[POINTERS])
    pointers[0:16] = pointers[8:16] + pointers[0:8]  # LOOP and COUNT swapped
    segments[POINTERS] = bytes(pointers)
    result = read_executors(BytesMemory(segments), _FakeRuntime(INTERP, CODES),
                            lookup=SYMBOLS.get)
    assert result.executors == () and "no executor array" in result.stop_reason


def test_an_empty_array_still_lists_the_cold_and_deleted_executors():
    result = read_executors(BytesMemory(_segments(count=0)), _FakeRuntime(INTERP, CODES),
                            lookup=SYMBOLS.get)
    assert result.stop_reason == ""
    assert [e.address for e in result] == [DEAD, COLD, COLD_DYNAMIC]


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
    layout = LAYOUT.with_offsets(
        "DWARF", interp_executor_ptrs=ARRAY, interp_executor_count=ARRAY + 8,
        interp_deletion_head=ARRAY + 0x18, interp_cold_executor=ARRAY + 0x20,
        interp_cold_dynamic_executor=ARRAY + 0x28)
    result = read_executors(BytesMemory(_segments()), _FakeRuntime(INTERP, CODES),
                            layout=layout)
    assert result.stop_reason == ""
    assert _summary(result) == EXPECTED


def test_without_dwarf_or_symbols_nothing_is_guessed():
    result = read_executors(BytesMemory(_segments()), _FakeRuntime(INTERP, CODES))
    assert result.executors == () and "needs DWARF" in result.stop_reason


def test_regions_are_one_trace_per_executor(executors):
    regions = executor_regions(executors)
    assert [(r.start, r.end, r.source, r.name, r.kind, r.owner) for r in regions][1:4] == [
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


# -- a real 3.15.0rc2 process, read with the table (no DWARF) -------------------------

def test_a_real_process_has_the_executors_cpython_reports():
    from tests.unit.test_cpython_executors import SCRIPT, jit_process, read_all
    with jit_process("1", minor="3.15-jit") as process:
        executors = read_all(process)
        assert executors.stop_reason == "" and executors.skipped == 0
        assert executors.list_heads and executors.list_heads[0][1] == ARRAY
        mine = {e.address: e for e in executors if e.filename == str(SCRIPT)}
        reported = process.facts["executors"]
        assert reported
        for fact in reported:
            executor = mine[fact["address"]]
            assert (executor.qualname, executor.jit_size) == (fact["qualname"],
                                                              fact["jit_size"])
            assert not executor.has_shim and executor.kind == "trace"
        # The interpreter's two cold executors, compiled with the JIT on.
        assert sorted(e.qualname for e in executors if e.kind == "cold-exit") == [
            "<cold dynamic exit>", "<cold exit>"]
        for executor in executors:
            assert executor.jit_code % 4096 == 0 and executor.jit_size % 4096 == 0
