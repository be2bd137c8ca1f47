"""CPython under real LLDB 23: 3.12 with -X perf, bt through the perf trampolines to
_start (LLDB alone stops at the first one) and py-mixed-bt, live and from a core;
3.13's and 3.14's JIT executors named, with their Python frames."""

import json
import re

import pytest

from tests.jit_python import JIT_MINORS, jit_python
from tests.lldb_driver import (SELECT_EVERY_FRAME, WAIT_FOR_PROVIDER,
                               parse_lldb_backtrace, run_lldb)
from tests.python_expect import SCRIPTS, marks, python_of
from tests.support import (GDB_BINARIES, PRINT_PID, REPO, lldb_errors, remove_launched,
                           remove_perf_map, run_gdb)

SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"
JIT_SCRIPT = SCRIPTS / "jit_scenarios.py"
NAMES = [f"py::recurse:{SCRIPT}"] * 4 + [f"py::<module>:{SCRIPT}"]


PY_FRAME = re.compile(r"^\[py\] (\S+) at (\S+):(\d+) \[synthetic\]$")


def python_frames(frames):
    """(index, (function, file, line)) of the [py] frames of a parsed bt."""
    found = []
    for index, frame in enumerate(frames):
        if frame.function.startswith("[py] "):
            match = PY_FRAME.match(frame.function)
            assert match, frame.line
            found.append((index, (match.group(1), match.group(2), int(match.group(3)))))
    return found


def native_frames(frames):
    return [f for f in frames if not f.function.startswith("[py] ")]


def check_bt(output):
    frames = parse_lldb_backtrace(output)
    names = [f.function for f in native_frames(frames)]
    assert [n for n in names if n.startswith("py::")] == NAMES, output
    for index, name in enumerate(names):
        if name.startswith("py::"):
            assert names[index - 1] == "_PyEval_EvalFrameDefault", output
            assert names[index + 1] == "py_trampoline_evaluator", output
    assert "Py_BytesMain" in names and names[-1] == "_start", output
    assert not any(n.startswith("??") for n in names), output
    assert "unwind stopped" not in output, output
    # Each eval loop is followed by the Python frame it runs, with its file and line.
    lines = marks(SCRIPT)
    python = python_frames(frames)
    assert [entry for _, entry in python] == (
        [("recurse", SCRIPT.name, lines["stop"])] + [("recurse", SCRIPT.name, lines["call"])] * 3
        + [("<module>", SCRIPT.name, lines["module"])]), output
    assert all(frames[index - 1].function == "_PyEval_EvalFrameDefault"
               for index, _ in python), output


def check_mixed(output):
    text = output.split("(lldb) py-mixed-bt\n")[1].split("(lldb) ")[0]
    assert re.findall(r"^     \[py\] (\S+) ", text, re.M) == ["recurse"] * 4 + ["<module>"], text
    assert "[holds the GIL]" in text, text
    assert "backtrace stopped" not in text, text
    document = json.loads(output.split("(lldb) py-mixed-bt --json\n")[1].split("\n(lldb) ")[0])
    thread = document["threads"][0]
    assert [f["function"] for f in thread["python"]] == ["recurse"] * 4 + ["<module>"]
    assert document["python_version"].startswith("3.12")


def test_perf_trampolines_live_and_from_gcore(tmp_path):
    python = python_of("3.12.1")
    core = tmp_path / "python.core"
    live = run_lldb(["process launch", "bt", "py-mixed-bt", "py-mixed-bt --json",
                     SELECT_EVERY_FRAME], [python, "-X", "perf", SCRIPT])
    assert re.search(r"Process (\d+) launched", live), live
    gcore_run = ""
    try:
        check_bt(live)
        check_mixed(live)
        assert lldb_errors(live.split(SELECT_EVERY_FRAME)[1]) == [], live
        gcore_run = run_gdb(GDB_BINARIES["gdb13"], ["run", PRINT_PID, f"gcore {core}"],
                            [python, "-X", "perf", SCRIPT], plugin=False)
        # The core's perf map is the gcore run's: same script, same trampolines.
        from_core = run_lldb([WAIT_FOR_PROVIDER, "bt", "py-mixed-bt", "py-mixed-bt --json"],
                             [python], core=core)
        check_bt(from_core)
        check_mixed(from_core)
    finally:
        remove_launched(live)
        if gcore_run:
            remove_perf_map(gcore_run)


def check_jit_bt(output, lines):
    """The trace and its shim named, the walk to _start, and the Python frames in bt:
    leaf and hot after the trace, <module> after the eval loop below it."""
    frames = parse_lldb_backtrace(output)
    native = native_frames(frames)
    lines_of = [f.line for f in native]
    trace = next(i for i, f in enumerate(lines_of) if "[jit] hot (" in f)
    assert re.search(rf"\[jit\] hot \({re.escape(str(JIT_SCRIPT))}:\d+\) trace 0x[0-9a-f]+ ",
                     lines_of[trace]), output
    assert native[trace - 1].function == "os_kill", output
    assert "[jit shim] hot (" in lines_of[trace + 1], output
    assert native[trace + 2].function == "_PyEval_EvalFrameDefault", output
    names = [f.function for f in native]
    assert "Py_BytesMain" in names and names[-1] == "_start", output
    assert "guess" not in output and "unwind stopped" not in output, output
    at = frames.index(native[trace])
    eval_loop = frames.index(native[trace + 2])
    name = JIT_SCRIPT.name
    assert python_frames(frames) == [
        (at + 1, ("leaf", name, lines["leaf-kill"])), (at + 2, ("hot", name, lines["hot"])),
        (eval_loop + 1, ("<module>", name, lines["module"]))], output


@pytest.mark.parametrize("minor", JIT_MINORS)
def test_cpython_jit_executors_named_with_their_python_frames(minor, tmp_path):
    """CPython's JIT (PYTHON_JIT=1): the trace and its entry shim are unwound and named
    as in GDB, the walk reaches _start, bt and py-mixed-bt put leaf and hot under the
    trace; the same from a core file."""
    lines = marks(JIT_SCRIPT)
    output = run_lldb(["settings set target.env-vars PYTHON_JIT=1", "process launch", "bt",
                       "py-mixed-bt", "jit-regions", SELECT_EVERY_FRAME],
                      [jit_python(minor), JIT_SCRIPT, "kill"])
    check_jit_bt(output.split("(lldb) py-mixed-bt")[0], lines)
    assert lldb_errors(output.split(SELECT_EVERY_FRAME)[1]) == [], output
    mixed = output.split("(lldb) py-mixed-bt\n")[1].split("(lldb) jit-regions")[0]
    under = re.findall(r"^#\d+\s+(.*?)\n((?:     \[py\] .*\n)+)", mixed, re.M)
    placed = [(parent.split(" (")[0].split(" at ")[0], python)
              for parent, block in under
              for python in re.findall(r"\[py\] (\S+) \(.*:(\d+)\)", block)]
    assert placed == [("[jit] hot", ("leaf", str(lines["leaf-kill"]))),
                      ("[jit] hot", ("hot", str(lines["hot"]))),
                      ("_PyEval_EvalFrameDefault", ("<module>", str(lines["module"])))], mixed
    assert "cpython-jit" in output.split("(lldb) jit-regions")[1], output
    core = tmp_path / "python.core"
    run_gdb(GDB_BINARIES["gdb13"], ["set environment PYTHON_JIT=1", "run", f"gcore {core}"],
            [jit_python(minor), JIT_SCRIPT, "kill"], plugin=False)
    check_jit_bt(run_lldb([WAIT_FOR_PROVIDER, "bt"], [jit_python(minor)], core=core), lines)


def test_python_frames_setting():
    """jit-unwind python-frames off: bt without [py] frames; on again: with them."""
    output = run_lldb(["process launch", "jit-unwind python-frames off", "bt",
                       "jit-unwind python-frames on", "bt", "jit-unwind"],
                      [python_of("3.12.1"), "-X", "perf", SCRIPT])
    try:
        off, on = output.split("(lldb) jit-unwind python-frames on")
        assert "[py] " not in off, output
        check_bt(on.split("(lldb) jit-unwind\n")[0])
        assert "python-frames: on" in on.split("(lldb) jit-unwind\n")[1], output
    finally:
        remove_launched(output)


def test_all_threads_of_a_jit_process():
    """Two threads sleeping from JIT code, the main thread stopping: every thread's
    walk reaches its start, and py-mixed-bt --all-threads names the Python threads."""
    output = run_lldb(["settings set target.env-vars PYTHON_JIT=1", "process launch",
                       "thread backtrace all", "py-mixed-bt --all-threads"],
                      [jit_python("3.13"), JIT_SCRIPT, "threads"])
    backtraces, mixed = output.split("(lldb) thread backtrace all")[1].split(
        "(lldb) py-mixed-bt --all-threads")
    per_thread = re.split(r"^\s*\*? thread #\d+", backtraces, flags=re.M)[1:]
    assert len(per_thread) == 3, output
    for text in per_thread:
        names = [f.function for f in parse_lldb_backtrace("frame #0: 0x0 x\n" + text)][1:]
        assert names[-1] in ("_start", "__clone3", "clone3", "clone"), text
        assert not any(n.startswith("??") for n in names), text
    assert "unwind stopped" not in backtraces and "guess" not in backtraces, output
    headings = re.findall(r'^Thread \d+ \(LWP \d+\) "([^"]+)"', mixed, re.M)
    assert sorted(headings) == ["MainThread", "spinner-0", "spinner-1"], mixed
    assert mixed.count("[holds the GIL]") == 1, mixed
