"""``--debugger none`` reads a native frame's CFI row with struct (``coreread/eh_frame.py``)
where the debuggers' path reads it through pyelftools (``unwind/cfi.py``): the same row
at the pcs of every FDE of libc, ld.so and the CPython 3.14 test interpreter, except
where pyelftools cannot decode the FDE at all (``DW_CFA_GNU_args_size``, which GDB
unwinds through): there the struct reader still gives the CFA and the return address."""

import bisect
from pathlib import Path

import pytest

from jit_unwind.coreread.eh_frame import EhFrame
from jit_unwind.unwind.cfi import RETURN_ADDRESS, CfiTable
from tests.jit_python import fixture_python

LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
LOADER = Path("/lib64/ld-linux-x86-64.so.2")


def _rules(row):
    """A row as comparable values: the CFA rule and each register's rule."""
    if row is None:
        return None
    found = {}
    for key, rule in row.items():
        if key == "pc":
            continue
        if key == "cfa":
            expr = getattr(rule, "expr", None)
            found[key] = (rule.reg, rule.offset) if expr is None else ("expr", bytes(expr))
        else:
            arg = rule.arg
            found[key] = (rule.type, bytes(arg) if isinstance(arg, (list, bytes)) else arg)
    return found


def _pcs(starts, index):
    start = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else start + 16
    return sorted({start, start + 1, start + 4, (start + end) // 2, max(start, end - 1)})


def _args_size(table: CfiTable, pc: int) -> bool:
    index = bisect.bisect_right(table._starts, pc) - 1
    entry = table._entry(table._offsets[index])
    return any(instruction.opcode == 0x2E for instruction in entry.instructions)


@pytest.mark.parametrize("path", [LIBC, LOADER, "3.14"], ids=["libc", "ld.so", "python3.14"])
def test_rows_equal_pyelftools(path):
    path = str(fixture_python(path) if path == "3.14" else path)
    ours, theirs = EhFrame(path), CfiTable(path)
    compared = only_ours = 0
    for index in range(len(ours._starts)):
        for pc in _pcs(ours._starts, index):
            mine, expected = _rules(ours.row_at(pc)), _rules(theirs.row_at(pc))
            if expected is None and mine is not None and _args_size(theirs, pc):
                # pyelftools fails on the whole FDE; GDB, and we, unwind through it
                assert mine["cfa"][0] is not None and RETURN_ADDRESS in mine, (hex(pc), mine)
                only_ours += 1
                continue
            assert mine == expected, f"{path} at {pc:#x}"
            compared += 1
    assert compared > 1000 and only_ours < compared // 100, (compared, only_ours)
