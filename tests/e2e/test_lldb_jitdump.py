"""CPython ``-X perf_jit`` under real LLDB 23: ``bt`` names the perf trampolines from
the jitdump and walks through them (by the dump's CFI) to ``_start``, live and from a
core, with no frame left to the stack scan's guesses."""

import os
import re

import pytest

from tests.lldb_driver import WAIT_FOR_PROVIDER, parse_lldb_backtrace, run_lldb
from tests.python_expect import RECURSE, python_of
from tests.support import GDB_BINARIES, PRINT_PID, fixture_binary, run_gdb

NAMES = [f"py::recurse:{RECURSE}"] * 4 + [f"py::<module>:{RECURSE}"]


def _check(output):
    frames = parse_lldb_backtrace(output)
    # The native frames; the [py] frame after each eval loop is test_lldb_cpython's.
    names = [frame.function for frame in frames if not frame.function.startswith("[py] ")]
    assert [name for name in names if name.startswith("py::")] == NAMES, output
    for index, name in enumerate(names):
        if name.startswith("py::"):
            assert names[index - 1] == "_PyEval_EvalFrameDefault", output
            assert names[index + 1] == "py_trampoline_evaluator", output
    assert "Py_BytesMain" in names and names[-1] == "_start", output
    assert "[guess" not in output and "unwind stopped" not in output, output


@pytest.mark.parametrize("version", ["3.13.0", "3.14.6"])
def test_perf_jit_trampolines_named_from_the_dump(tmp_path, version):
    python = python_of(version)
    live = run_lldb(["process launch", "bt"], [python, "-X", "perf_jit", RECURSE])
    pids = re.findall(r"Process (\d+) launched", live)
    core = tmp_path / "python.core"
    gcore = run_gdb(GDB_BINARIES["gdb13"], ["run", PRINT_PID, f"gcore {core}"],
                    [python, "-X", "perf_jit", RECURSE], plugin=False)
    pids += re.findall(r"inferior-pid (\d+)", gcore)
    try:
        _check(live)
        from_core = run_lldb([WAIT_FOR_PROVIDER, "bt"], [python], core=core)
        _check(from_core)
    finally:
        for pid in pids:
            try:
                os.unlink(f"/tmp/jit-{pid}.dump")
            except OSError:
                pass


def test_toy_jit_code_only_its_cfi_unwinds(tmp_path):
    """tests/fixtures/jitdump_jit.c: a frame whose CFA is in rbx, rbp zeroed, described
    only by its jitdump (still in the writer's buffer, the file where only the process's
    mapping of it says): LLDB's bt goes through it to main, live and from a core."""
    program = fixture_binary("jitdump_jit")
    core = tmp_path / "toy.core"
    live = run_lldb(["process launch", "bt"], [program, "3", "--dir", tmp_path])
    run_gdb(GDB_BINARIES["gdb13"], ["run", f"gcore {core}"],
            [program, "3", "--dir", tmp_path], plugin=False)
    from_core = run_lldb([WAIT_FOR_PROVIDER, "bt"], [program], core=core)
    for output in (live, from_core):
        names = [frame.function for frame in parse_lldb_backtrace(output)]
        assert names[names.index("descend"):] == \
            ["descend", "jit::realigned"] * 4 + ["main"] + names[names.index("main") + 1:], output
        assert "[guess" not in output and "unwind stopped" not in output, output


def test_a_dump_elsewhere_is_read_when_the_setting_names_it(tmp_path):
    """A core whose jitdump was moved away from /tmp: the trampolines have no names (LLDB
    still unwinds them) until ``jit-unwind jitdump PATH`` names the file; ``auto`` goes
    back to looking alone."""
    python = python_of("3.13.0")
    core = tmp_path / "python.core"
    gcore = run_gdb(GDB_BINARIES["gdb13"], ["run", PRINT_PID, f"gcore {core}"],
                    [python, "-X", "perf_jit", RECURSE], plugin=False)
    (pid,) = re.findall(r"inferior-pid (\d+)", gcore)
    moved = tmp_path / "kept.dump"
    os.rename(f"/tmp/jit-{pid}.dump", moved)
    output = run_lldb([WAIT_FOR_PROVIDER, "jit-unwind", "bt", f"jit-unwind jitdump {moved}",
                       "bt", "jit-unwind", "jit-unwind jitdump auto", "jit-unwind jitdump",
                       "help jit-unwind"], [python], core=core)
    first, told = output.split(f"(lldb) jit-unwind jitdump {moved}\n")
    assert "jitdump: auto" in first, first
    names = [f.function for f in parse_lldb_backtrace(first)]
    assert not [name for name in names if name.startswith("py::")], first
    told, after = told.split("(lldb) jit-unwind jitdump auto\n")
    _check(told)
    assert f"jitdump: {moved}" in told, told
    assert after.startswith("jitdump: auto"), after
    assert "usage: jit-unwind jitdump PATH|auto" in after, after
    assert "jitdump        the perf jitdump file" in after, after
