"""CPython 3.12-3.15 with -X perf: every Python call runs through a perf trampoline in
anonymous memory (3.12/3.13: ``sub rsp, 8; call *rcx``; 3.14+: ``push rbp; mov rbp, rsp;
call *rcx``).  Without the plugin GDB loses the stack at the first one."""


import re

import pytest

from tests.python_expect import python_of
from tests.support import (PRINT_PID, REPO, assert_no_unnamed_frames, parse_backtrace,
                           remove_perf_map, run_gdb)

SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"
_FRAME_ARGUMENT = re.compile(r"[(, ]frame=(0x[0-9a-f]+)[,)]")


def _trampoline_names(frames):
    return [f.function for f in frames if f.function.startswith("py::")]


def _check(frames, output):
    assert_no_unnamed_frames(frames)
    names = [f.function for f in frames]
    assert names[-1] in ("_start", "main") or "main" in names, output
    assert "main" in names or "Py_BytesMain" in names, output
    expected = [f"py::recurse:{SCRIPT}"] * 4 + [f"py::<module>:{SCRIPT}"]
    assert _trampoline_names(frames) == expected, output
    # Each trampoline sits between two interpreter frames: it was unwound correctly, and
    # the registers it passes through are right: the evaluator below it called the eval
    # loop above it with the same interpreter frame.
    for index, frame in enumerate(frames):
        if frame.function.startswith("py::"):
            assert "_PyEval_EvalFrameDefault" in names[index - 1], output
            assert "py_trampoline_evaluator" in names[index + 1], output
            evaluated = _FRAME_ARGUMENT.findall(frames[index + 1].line)
            assert len(evaluated) == 1, output
            assert _FRAME_ARGUMENT.findall(frames[index - 1].line) == evaluated, output


@pytest.mark.parametrize("version", ["3.12.1", "3.13.0", "3.14.6", "3.15.0rc2"])
def test_perf_trampolines_are_unwound_and_named(gdb, tmp_path, version):
    python = python_of(version)
    core = tmp_path / "python.core"
    live = run_gdb(gdb, ["run", PRINT_PID, "bt", f"gcore {core}"],
                   [python, "-X", "perf", SCRIPT])
    try:
        _check(parse_backtrace(live), live)
        assert core.exists(), live
        # The perf map is still on disk, so the core's trampolines get their names too.
        from_core = run_gdb(gdb, ["bt"], [python], core=core)
        _check(parse_backtrace(from_core), from_core)
    finally:
        remove_perf_map(live)


@pytest.mark.parametrize("version", ["3.12.1", "3.14.6", "3.15.0rc2"])
def test_without_the_plugin_gdb_loses_the_stack(gdb, version):
    """The problem this project solves, kept as a test so the fixture stays honest.
    3.12 (``sub rsp, 8``): GDB stops at the first trampoline.  3.14+ (``push rbp``): GDB
    takes the trampoline's saved rbp for its return address, a made-up frame; on 3.14
    that is the thread state inside _PyRuntime and GDB goes on to main through it, on 3.15
    (frame pointers everywhere) a stack address, and GDB soon stops at a repeated frame."""
    python = python_of(version)
    output = run_gdb(gdb, ["run", PRINT_PID, "bt 70"], [python, "-X", "perf", SCRIPT],
                     plugin=False)
    try:
        names = [f.function for f in parse_backtrace(output)]
        assert "??" in names, output                   # the trampolines have no name
        if version.startswith("3.14"):
            assert "_PyRuntime" in names, output       # a "function" that is data
        else:
            assert "main" not in names and "Py_BytesMain" not in names, output
    finally:
        remove_perf_map(output)
