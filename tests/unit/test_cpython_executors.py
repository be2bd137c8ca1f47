"""CPython 3.13's JIT executors read from live processes (no debugger).

Each test runs tests/fixtures/python/jit_hot_loop.py on CPython 3.13 built with the
experimental JIT (tests/fixtures/build_cpython.sh) until it stops itself with
SIGSTOP, then reads the executor list through /proc/PID/mem.  The script also tells
which executors CPython itself reports (``_opcode.get_executor``): the walk must find
each of them, with the same size and function.
"""

import ast
import os
import re
import struct
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.cpython import find_runtime
from jit_unwind.cpython.executors import (DWARF_FIELDS, EXECUTOR_LAYOUTS, Executor,
                                          ExecutorList, executor_layout, read_executors)
from jit_unwind.regions.cpython_jit import REGION_SOURCE, executor_regions
from jit_unwind.cpython.version import PyVersion
from jit_unwind.target import BytesMemory, MemoryReadError
from jit_unwind.arch.x86_64_decoder import CALLEE_SAVED, DecodeError, decode_prologue
from tests.jit_python import JIT_MINORS, jit_python
from tests.support import REPO
from tests.unit._proc import (ProcMemory, load_bias, pyenv_python, stopped_process,
                              stopped_python)

SCRIPT = REPO / "tests" / "fixtures" / "python" / "jit_hot_loop.py"
STOP_TIMEOUT = 120.0
SYMBOLS = ("_PyRuntime", "Py_Version", "COLD_EXITS", "PyExc_AssertionError",
           "PyExc_NotImplementedError")


@lru_cache(maxsize=None)
def _elf_symbols(path: str) -> Dict[str, int]:
    """The link-time addresses of SYMBOLS in the (static) interpreter, from .symtab."""
    table: Dict[str, int] = {}
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        for name in (".symtab", ".dynsym"):
            section = elf.get_section_by_name(name)
            if section is None:
                continue
            for symbol in section.iter_symbols():
                if symbol.name in SYMBOLS and symbol["st_value"]:
                    table.setdefault(symbol.name, symbol["st_value"])
    return table


def script_functions() -> Dict[str, int]:
    """{qualname: line of its ``def``} of the script's functions."""
    tree = ast.parse(SCRIPT.read_text())
    return {node.name: node.lineno for node in tree.body
            if isinstance(node, ast.FunctionDef)}


def check_first_line(executor: Executor) -> None:
    """The executor's file has its function's ``def`` (or the module) at firstlineno."""
    if executor.filename.startswith("<frozen "):  # importlib: no file to look at
        assert executor.firstlineno >= 1, executor
        return
    lines = Path(executor.filename).read_text().splitlines()
    name = executor.qualname.rsplit(".", 1)[-1]
    if name == "<module>":
        assert executor.firstlineno == 1, executor
    elif name.startswith("<"):  # <lambda>, <genexpr>: an expression on that line
        assert 1 <= executor.firstlineno <= len(lines), executor
    else:
        line = lines[executor.firstlineno - 1]
        assert re.match(rf"\s*(async\s+)?def {re.escape(name)}\b", line), (executor, line)


@dataclass
class JitProcess:
    pid: int
    facts: dict
    memory: ProcMemory
    python: Path

    def lookup(self):
        bias = load_bias(self.pid, self.python.resolve())
        table = {name: value + bias for name, value in
                 _elf_symbols(str(self.python.resolve())).items()}
        return table.get

    def maps(self) -> List[Tuple[int, int, str, str]]:
        result = []
        with open(f"/proc/{self.pid}/maps") as handle:
            for line in handle:
                fields = line.split(None, 5)
                start, end = (int(x, 16) for x in fields[0].split("-"))
                result.append((start, end, fields[1],
                               fields[5].strip() if len(fields) == 6 else ""))
        return result


@contextmanager
def jit_process(jit: str, iterations: int = 300_000, minor: str = "3.13"
                ) -> Iterator[JitProcess]:
    """Run the script with PYTHON_JIT=``jit`` until it stops itself; kill it after."""
    python = jit_python(minor)
    env = dict(os.environ, PYTHON_JIT=jit)
    with stopped_process([python, SCRIPT, iterations], env, STOP_TIMEOUT) as (
            process, facts, memory):
        yield JitProcess(process.pid, facts, memory, python)


def read_all(process: JitProcess, **kwargs) -> ExecutorList:
    """Every executor, with the built-in table (no DWARF) of the process's version."""
    lookup = process.lookup()
    runtime = find_runtime(process.memory, lookup)
    assert f"{runtime.version.major}.{runtime.version.minor}" in str(process.python)
    return read_executors(process.memory, runtime, lookup=lookup, **kwargs)


def traces(executors: ExecutorList) -> List[Executor]:
    return [e for e in executors if e.kind == "trace"]


def call_end(code: bytes, start: int) -> Tuple[int, object]:
    """Address right after the shim's first call, and the decoded state up to it."""
    for length in range(1, len(code) + 1):
        try:
            state = decode_prologue(code, start, start + length)
        except DecodeError:
            continue
        if state.calls == 1:
            return start + length, state
    raise AssertionError(f"no call in the shim at {start:#x}: {code.hex()}")


@pytest.fixture(scope="module", params=JIT_MINORS)
def hot(request):
    """A stopped process of each JIT build (3.13, 3.14) and its executors."""
    with jit_process("1", minor=request.param) as process:
        yield process, read_all(process)


def _minor(process: JitProcess) -> str:
    return process.python.name.replace("python", "")


def test_executors_are_named_after_the_script_functions(hot):
    process, executors = hot
    assert executors.stop_reason == ""
    assert executors.skipped == 0
    found = traces(executors)
    assert found, "no executor with machine code"
    for executor in found:
        assert executor.error == "", executor
        assert executor.code_address and executor.parent is None
        check_first_line(executor)
    # The script's hot functions have executors (startup code may have more: enum.py).
    mine = [e for e in found if e.filename == str(SCRIPT)]
    functions = script_functions()
    for executor in mine:
        assert executor.qualname in functions, executor
        assert executor.firstlineno == functions[executor.qualname], executor
    found = mine
    names = {e.qualname for e in found}
    # 3.14 keeps no executor for accumulate's loop (CPython's own view agrees, below).
    expected = {"accumulate", "count_down"} if _minor(process) == "3.13" else {"count_down"}
    assert expected <= names
    # CPython's own view (_opcode.get_executor) agrees: same objects, sizes, functions.
    by_address = {e.address: e for e in found}
    reported = process.facts["executors"]
    assert reported
    for fact in reported:
        executor = by_address[fact["address"]]
        assert executor.qualname == fact["qualname"]
        assert executor.jit_size == fact["jit_size"]
        assert fact["valid"]


def test_executor_fields_are_consistent(hot):
    process, executors = hot
    starts = [e.jit_code for e in executors]
    assert starts == sorted(starts)
    executable = [(start, end) for start, end, perms, path in process.maps()
                  if "x" in perms and not path]
    previous_end = 0
    for executor in executors:
        assert executor.jit_code % 4096 == 0 and executor.jit_size % 4096 == 0
        assert executor.jit_code < executor.shim_end < executor.end
        assert executor.jit_code >= previous_end, "executors overlap"
        previous_end = executor.end
        assert any(start <= executor.jit_code and executor.end <= end
                   for start, end in executable), f"{executor} is not in an x mapping"
    # One shim for all: the same size in every executor (cold exits included).
    assert len({e.shim_end - e.jit_code for e in executors}) == 1
    # 3.13's COLD_EXITS: 200 one-uop executors, compiled when the JIT was switched on.
    # (3.14 makes its cold executor lazily, with no symbol to find it by.)
    cold = [e for e in executors if e.kind == "cold-exit"]
    expected = 200 if _minor(process) == "3.13" else 0
    assert [e.qualname for e in sorted(cold, key=lambda e: e.address)] == [
        f"<cold exit {i}>" for i in range(expected)]


def test_find_by_pc(hot):
    _, executors = hot
    for executor in executors:
        for pc in (executor.jit_code, executor.shim_end - 1, executor.shim_end,
                   executor.end - 1):
            assert executors.find(pc) is executor
        assert executors.find(executor.end) is not executor
        assert executors.find(executor.jit_code - 1) is not executor
    assert executors.find(0) is None
    assert executors.find(2 ** 64 - 1) is None


def test_shims_decode_as_pushes_and_a_call_to_the_trace(hot):
    process, executors = hot
    for executor in executors:
        code = process.memory.read(executor.jit_code, executor.shim_end - executor.jit_code)
        after_call, state = call_end(code, executor.jit_code)
        # 3.13's shim saves every callee-saved register; 3.14's all but rbp (its
        # caller's rbp is then found from the caller's prologue).
        saved = set(CALLEE_SAVED) - ({"rbp"} if _minor(process) == "3.14" else set())
        assert set(state.pushed_callee_saved()) == saved, state.instructions
        assert state.frame_pointer_depth is None
        # The call is a `call rel32` to the trace, which starts right after the shim.
        call = code[after_call - executor.jit_code - 5:after_call - executor.jit_code]
        assert call[0] == 0xE8, code.hex()
        target = after_call + struct.unpack("<i", call[1:])[0]
        assert target == executor.shim_end


def test_regions(hot):
    _, executors = hot
    regions = executor_regions(executors)
    assert len(regions) == 2 * len(executors)
    assert {r.source for r in regions} == {REGION_SOURCE}
    for executor in traces(executors):
        label = f"{executor.qualname} ({executor.filename}:{executor.firstlineno})"
        shim, trace = [r for r in regions if executor.jit_code <= r.start < executor.end]
        assert (shim.start, shim.end, shim.name) == (
            executor.jit_code, executor.shim_end, f"[jit shim] {label}")
        assert (trace.start, trace.end, trace.name) == (
            executor.shim_end, executor.end,
            f"[jit] {label} trace {executor.jit_code:#x}")
    for cold in (e for e in executors if e.kind == "cold-exit"):
        assert f"[jit] {cold.qualname} trace {cold.jit_code:#x}" in {r.name for r in regions}


def test_jit_off_has_no_executors():
    with jit_process("0", iterations=50_000) as process:
        assert process.facts["executors"] == []
        executors = read_all(process)
        assert executors.stop_reason == ""
        assert len(executors) == 0 and executors.skipped == 0
        assert executor_regions(executors) == []
        assert len(executors.list_heads) == 1


def test_limits_and_unreadable_memory_end_the_list_with_a_reason():
    """On 3.13, whose list holds several traces here (3.14's holds one)."""
    with jit_process("1") as process:
        _check_limits(process, read_all(process))


def _check_limits(process, full):
    lookup = process.lookup()
    runtime = find_runtime(process.memory, lookup)
    limited = read_executors(process.memory, runtime, max_executors=1)
    assert limited.stop_reason == "more than 1 executors"
    assert len(limited) == 1
    # Walk order is list order: break the list at its second executor.
    chain = []
    head_offset = full.list_heads[0][1]
    address = process.memory.read_u64(full.list_heads[0][0] + head_offset)
    layout = executor_layout(runtime.version)
    while address:
        chain.append(address)
        address = process.memory.read_u64(address + layout.links_next)
    assert set(chain) == {e.address for e in traces(full)}
    assert len(chain) >= 2
    broken = chain[1]

    class Holey(ProcMemory):
        def read(self, address, size):
            if address <= broken < address + size:
                raise MemoryReadError(address, size)
            return super().read(address, size)

    holey = Holey(process.pid)
    try:
        result = read_executors(holey, find_runtime(holey, lookup))
    finally:
        holey.close()
    assert result.stop_reason == f"cannot read the executor at {broken:#x}"
    assert [e.address for e in result] == [chain[0]]


def test_a_wrong_layout_is_refused_not_trusted():
    with jit_process("1", iterations=50_000) as process:
        _check_a_wrong_layout_is_refused(process)


def _check_a_wrong_layout_is_refused(process):
    """3.13's table, shifted: the optimizer pointer check refuses it."""
    runtime = find_runtime(process.memory, process.lookup())
    table = executor_layout((3, 13))
    shifted = table.with_offsets("shifted table",
                                 interp_list_head=table.interp_list_head + 8,
                                 interp_optimizer=table.interp_optimizer + 8)
    result = read_executors(process.memory, runtime, layout=shifted)
    assert len(result) == 0
    assert "not an optimizer" in result.stop_reason, result.stop_reason
    assert "shifted table does not fit this build" in result.stop_reason
    no_anchor = table.with_offsets("bad head", interp_list_head=table.interp_list_head - 16,
                                   interp_optimizer=None)
    result = read_executors(process.memory, runtime, layout=no_anchor)
    assert len(result) == 0 and "is not a list head" in result.stop_reason


def test_a_313_build_without_the_jit_has_an_empty_list():
    """pyenv's 3.13.0 (no _Py_TIER2): PyInterpreterState.optimizer stays NULL, the list
    head too, and the table's offsets hold there as well."""
    with stopped_python(pyenv_python("3.13.0"), ["3"]) as process:
        runtime = find_runtime(process.memory, process.lookup())
        interp = runtime.interpreter_addresses()[0][0]
        layout = executor_layout(runtime.version)
        assert process.memory.read_u64(interp + layout.interp_optimizer) == 0
        executors = read_executors(process.memory, runtime)
        assert (len(executors), executors.skipped, executors.stop_reason) == (0, 0, "")
        assert executors.list_heads == ((interp, layout.interp_list_head),)


def _gdb_offsets(python: Path, expressions: Dict[str, str]) -> Dict[str, int]:
    commands = []
    for expression in expressions.values():
        commands += ["-ex", f"print (long) {expression}"]
    output = subprocess.run(["/usr/bin/gdb", "-nx", "-batch", *commands, str(python)],
                            capture_output=True, text=True, errors="replace", timeout=300).stdout
    values = [int(v) for v in re.findall(r"^\$\d+ = (-?\d+)$", output, re.M)]
    assert len(values) == len(expressions), output
    return dict(zip(expressions, values))


ARRAY_ONLY = ("array_index", "interp_executor_ptrs", "interp_executor_count",
              "interp_deletion_head", "interp_cold_executor",
              "interp_cold_dynamic_executor")
LIST_ONLY = ("interp_list_head", "interp_optimizer", "jit_side_entry")


@pytest.mark.parametrize("minor", [*JIT_MINORS, "3.15-jit"])
def test_the_table_matches_the_dwarf_of_the_jit_build(minor):
    python = jit_python(minor)
    table = EXECUTOR_LAYOUTS[(3, int(minor.split("-")[0].split(".")[1]))]
    offsetof = "&((%s *) 0)->%s"
    expressions = {field: offsetof % (type_name, member)
                   for field, (type_name, member) in DWARF_FIELDS.items()
                   if field not in (LIST_ONLY if table.uses_array else ARRAY_ONLY)}
    expressions["executor_size"] = "sizeof(_PyExecutorObject)"
    expressions["exit_size"] = "sizeof(_PyExitData)"
    expressions["exit_executor"] = "&((_PyExitData *) 0)->executor"
    expressions["linked_byte"] = ("&((_PyExecutorObject *) 0)->vm_data."
                                  + ("valid" if table.uses_array else "linked"))
    if table.cold_exit_count:
        expressions["cold_exit_count"] = "sizeof(COLD_EXITS) / sizeof(COLD_EXITS[0])"
    if table.interp_list_head is None and not table.uses_array:
        del expressions["interp_list_head"], expressions["interp_optimizer"]
    if table.common_consts:  # the probe's anchor: common_consts, then bool jit
        expressions["consts"] = offsetof % ("PyInterpreterState", "common_consts")
        expressions["jit"] = offsetof % ("PyInterpreterState", "jit")
    measured = _gdb_offsets(python, expressions)
    if table.common_consts:
        assert measured.pop("jit") - measured["consts"] == 8 * table.common_consts
    if table.uses_array:  # the table has them relative to common_consts
        assert table.array_fields(measured.pop("consts")) == tuple(
            measured.pop(field) for field in ARRAY_ONLY[1:])
    measured.pop("consts", None)
    for field, value in measured.items():
        if field == "linked_byte":
            assert table.linked[0] == value
        else:
            assert getattr(table, field) == value, field


# -- the 3.14+ probe for executor_list_head, on made-up memory -----------------------

class _FakeRuntime:
    """Just what read_executors uses: version, layout (ob_type, tp_name), the
    interpreter list and a code reader."""

    def __init__(self, interp: int, codes):
        self.version = PyVersion(3, 14, 0)
        self.layout = _Names()
        self._interp = interp
        self.codes = codes

    def interpreter_addresses(self):
        return [self._interp], ""


class _Names:
    ob_type = 8
    tp_name = 24


class _Codes:
    def read(self, address):
        from jit_unwind.cpython.code import CodeInfo
        return CodeInfo(address, "f", "f", "/app.py", 7, b"", address + 200, 1)


def _object(type_address: int, size: int) -> bytearray:
    data = bytearray(size)
    struct.pack_into("<QQ", data, 0, 1, type_address)
    return data


def test_314_probe_finds_the_list_head_after_common_consts():
    layout = EXECUTOR_LAYOUTS[(3, 14)]
    segments = {}
    executor_type, name = 0x10000, 0x11000
    type_object = _object(0x10000, 64)
    struct.pack_into("<Q", type_object, 24, name)
    segments[executor_type] = bytes(type_object)
    segments[name] = b"uop_executor\0"
    assertion, not_implemented = 0x20000, 0x20100
    symbols = {"PyExc_AssertionError": 0x30000, "PyExc_NotImplementedError": 0x30008}
    segments[0x30000] = struct.pack("<QQ", assertion, not_implemented)
    interp = 0x100000
    body = bytearray(0x30000)
    consts = 0x2a000
    struct.pack_into("<QQ", body, consts, assertion, not_implemented)
    struct.pack_into("<Q", body, consts + 8 * 5, 1)  # bool jit
    head_offset = consts + 8 * 5 + 8
    first, second, code = 0x200000, 0x200400, 0x300000
    struct.pack_into("<Q", body, head_offset, first)
    segments[interp] = bytes(body)
    for address, following, previous, jit in ((first, second, 0, 0x7f0000000000),
                                               (second, 0, first, 0x7f0000004000)):
        record = _object(executor_type, 144)
        struct.pack_into("<QQQ", record, layout.links_next, following, previous, code)
        record[layout.linked[0]] |= layout.linked[1]
        struct.pack_into("<QQQ", record, layout.jit_size, 0x4000, jit, jit + 23)
        segments[address] = bytes(record)
    memory = BytesMemory(segments)
    runtime = _FakeRuntime(interp, _Codes())
    result = read_executors(memory, runtime, lookup=symbols.get)
    assert result.stop_reason == ""
    assert result.list_heads == ((interp, head_offset),)
    assert [(e.address, e.shim_end - e.jit_code, e.description) for e in result] == [
        (first, 23, "f (/app.py:7)"), (second, 23, "f (/app.py:7)")]
    # Without the symbols the offset is unknown, and the reason says what is missing.
    result = read_executors(memory, runtime)
    assert len(result) == 0 and "needs DWARF" in result.stop_reason
    # A list that loops ends with a reason, keeping what was read.
    looping = dict(segments)
    record = bytearray(segments[second])
    struct.pack_into("<Q", record, layout.links_next, second)
    looping[second] = bytes(record)
    result = read_executors(BytesMemory(looping), runtime, lookup=symbols.get)
    assert "links back to" in result.stop_reason or "loops" in result.stop_reason
    assert [e.address for e in result] == [first, second]
