"""CPython 3.12/3.13 with -X perf: every Python call runs through a perf trampoline in
anonymous memory.  Without the plugin GDB loses the stack at the first one."""


import pytest

from tests.support import (PRINT_PID, REPO, assert_no_unnamed_frames, parse_backtrace,
                           pyenv_python, remove_perf_map, run_gdb)

SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"


def _trampoline_names(frames):
    return [f.function for f in frames if f.function.startswith("py::")]


def _check(frames, output):
    assert_no_unnamed_frames(frames)
    names = [f.function for f in frames]
    assert names[-1] in ("_start", "main") or "main" in names, output
    assert "main" in names or "Py_BytesMain" in names, output
    expected = [f"py::recurse:{SCRIPT}"] * 4 + [f"py::<module>:{SCRIPT}"]
    assert _trampoline_names(frames) == expected, output
    # Each trampoline sits between two interpreter frames: it was unwound correctly.
    for index, frame in enumerate(frames):
        if frame.function.startswith("py::"):
            assert "_PyEval_EvalFrameDefault" in names[index - 1], output
            assert "py_trampoline_evaluator" in names[index + 1], output


@pytest.mark.parametrize("version", ["3.12.1", "3.13.0"])
def test_perf_trampolines_are_unwound_and_named(gdb, tmp_path, version):
    python = pyenv_python(version)
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


def test_without_the_plugin_gdb_loses_the_stack(gdb):
    """The problem this project solves, kept as a test so the fixture stays honest."""
    python = pyenv_python("3.12.1")
    output = run_gdb(gdb, ["run", "bt 40"], [python, "-X", "perf", SCRIPT], plugin=False)
    names = [f.function for f in parse_backtrace(output)]
    assert "main" not in names and "Py_BytesMain" not in names
    assert "??" in names
