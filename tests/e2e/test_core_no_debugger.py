"""``jit-unwind core --debugger none`` as a user runs it beyond the same-JSON cores
(``test_same_json.py``): a core of three threads (two of them in CPython 3.14's JIT
code) gives GDB 18's document, thread numbers, LWPs and names included; ``attach`` and a
file that is no core are one-line usage errors."""

import pytest

from tests.e2e.test_cli import assert_one_line_error, jit_unwind
from tests.e2e.test_same_json import (differences, gdb_document, no_debugger,
                                      without_tail_calls)
from tests.jit_python import fixture_python
from tests.python_expect import SCRIPTS
from tests.support import GDB_BINARIES, run_gdb


@pytest.fixture(scope="module")
def threads_core(tmp_path_factory):
    """GDB 18's gcore of CPython 3.14 with the JIT on, three threads."""
    python = fixture_python("3.14")
    core = tmp_path_factory.mktemp("threads") / "program.core"
    output = run_gdb(GDB_BINARIES["gdb18"], ["set environment PYTHON_JIT=1", "run",
                                             f"gcore {core}"],
                     [python, SCRIPTS / "jit_scenarios.py", "threads"], plugin=False)
    assert core.exists(), output
    return python, core


def test_three_threads_give_gdbs_document(threads_core, tmp_path):
    python, core = threads_core
    gdb, tail_calls = gdb_document([python], core, tmp_path)
    expected, _ = without_tail_calls(
        gdb, lambda number, frame: frame["level"] in tail_calls.get(number, ()))
    assert len(expected["threads"]) == 3, expected
    assert sum(any(f["kind"] == "jit" for f in t["frames"]) for t in expected["threads"]) == 2
    status, document, errors = no_debugger(core)  # the executable the core names
    assert status == 0, errors
    assert document == expected, "--debugger none:\n" + differences(document, expected)


def test_attach_needs_a_debugger():
    assert_one_line_error(jit_unwind("attach", "--debugger", "none", "1"), 2,
                          ["--debugger none", "core"])


def test_a_file_that_is_no_core(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a core\n")
    assert_one_line_error(jit_unwind("core", "--debugger", "none", text, "/bin/true"), 2,
                          ["notes.txt", "core file"])
