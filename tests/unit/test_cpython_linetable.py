"""co_linetable decoding, checked against CPython's own co_positions()."""

import json
import subprocess
import sys

import pytest

from jit_unwind.cpython.linetable import (_svarint, _varint, iter_line_ranges,
                                          line_for_address, line_for_index)
from tests.support import REPO, pyenv_python

COMPARE = r"""
import importlib, json, sys, types
sys.path.insert(0, sys.argv[1])
from jit_unwind.cpython.linetable import iter_line_ranges, line_for_index

def codes(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)

count = units = 0
mismatches = []
for name in ("threading", "json.decoder", "dataclasses", "argparse", "typing",
             "asyncio.base_events", "collections", "inspect"):
    module = importlib.import_module(name)
    with open(module.__file__) as handle:
        top = compile(handle.read(), module.__file__, "exec")
    for code in codes(top):
        count += 1
        expected = [position[0] for position in code.co_positions()]
        units += len(expected)
        mine = []
        for start, end, line in iter_line_ranges(code.co_linetable, code.co_firstlineno):
            assert start == len(mine)
            mine += [line] * (end - start)
        if mine != expected:
            mismatches.append([code.co_qualname, mine[:50], expected[:50]])
        for index in sorted({0, len(expected) // 3, len(expected) // 2, len(expected) - 1}):
            if line_for_index(code.co_linetable, code.co_firstlineno, index) != expected[index]:
                mismatches.append([code.co_qualname, index])
        if line_for_index(code.co_linetable, code.co_firstlineno, -1) != code.co_firstlineno:
            mismatches.append([code.co_qualname, -1])
        if line_for_index(code.co_linetable, code.co_firstlineno, len(expected)) is not None:
            mismatches.append([code.co_qualname, "past the end"])
print(json.dumps({"codes": count, "units": units, "mismatches": mismatches[:20]}))
"""


@pytest.mark.parametrize("version", ["3.11.7", "3.12.1", "3.13.0"])
def test_lines_match_co_positions(version):
    """Every code unit of every code object of a few stdlib modules."""
    result = subprocess.run([str(pyenv_python(version)), "-c", COMPARE,
                             str(REPO / "plugin")], capture_output=True, text=True,
                            errors="replace", timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["codes"] > 1000 and report["units"] > 100_000, report
    assert report["mismatches"] == []


def test_varints_as_locations_md_describes_them():
    assert _varint(bytes([0x3F]), 0) == 63
    assert _varint(bytes([0x48, 0x03]), 0) == 200
    assert _svarint(bytes([0x05]), 0) == -2  # 5 = (2 << 1) | 1
    assert _svarint(bytes([0x04]), 0) == 2


def test_every_entry_kind():
    table = bytes([
        0x80 | (14 << 3) | 1, 0x04, 0x00, 0x01, 0x02,  # long form: line +2, 2 units
        0x80 | (3 << 3) | 0, 0x12,                      # short form: same line, 1 unit
        0x80 | (11 << 3) | 2, 0x04, 0x08,               # one-line form: line +1, 3 units
        0x80 | (15 << 3) | 0,                           # no location, 1 unit
        0x80 | (13 << 3) | 3, 0x07,                     # no columns: line -3, 4 units
    ])
    assert list(iter_line_ranges(table, 10)) == [
        (0, 2, 12), (2, 3, 12), (3, 6, 13), (6, 7, None), (7, 11, 10)]
    assert [line_for_index(table, 10, i) for i in range(-1, 12)] == [
        10, 12, 12, 12, 13, 13, 13, None, 10, 10, 10, 10, None]
    assert line_for_address(table, 10, 0x1000, 0x1000 + 2 * 4) == 13


def test_garbage_stops_the_table():
    assert list(iter_line_ranges(bytes([0x12, 0x80 | (3 << 3), 0]), 1)) == []
    assert line_for_index(b"", 5, 0) is None
    assert line_for_index(b"", 5, -1) == 5


def test_the_running_interpreter_too():
    """The test runner's own Python, in process."""
    def codes(code):
        yield code
        for const in code.co_consts:
            if hasattr(const, "co_linetable"):
                yield from codes(const)

    with open(json.__file__) as handle:
        top = compile(handle.read(), json.__file__, "exec")
    for code in codes(top):
        for index, position in enumerate(code.co_positions()):
            assert line_for_index(code.co_linetable, code.co_firstlineno,
                                  index) == position[0], (code, index)
    assert sys.version_info >= (3, 11)
