"""Python frames interleaved with native frames, in bt and py-mixed-bt (GDB 13 and 18)."""

import json
import re
import shutil
import subprocess

import jsonschema
import pytest

from tests.python_expect import (RECURSE, expected_recursion, marks, python_of,
                                 python_frames_with_parents, trampolines_with_python_frames)
from tests.jit_python import jit_python
from tests.support import PRINT_PID, REPO, pyenv_python, remove_perf_map, run_gdb

# pyenv's 3.11-3.13, then the test interpreters 3.14 and 3.15 (tests/jit_python.py).
VERSIONS = ["3.11.7", "3.12.1", "3.13.0", "3.14.6", "3.15.0rc2"]
PERF_VERSIONS = ["3.12.1", "3.13.0", "3.14.6", "3.15.0rc2"]   # -X perf exists from 3.12 on
EVAL = "_PyEval_EvalFrameDefault"


def _check_bt(output, depth, perf):
    found = python_frames_with_parents(output)
    assert [entry for entry, _ in found] == expected_recursion(depth), output
    assert all(parent == EVAL for _, parent in found), output
    if perf:
        # With -X perf every Python call has its own eval loop: one frame each.
        parents = [line for line in output.splitlines() if re.match(rf"^#\d+ .*{EVAL} ", line)]
        assert len(parents) == depth + 2, output
        # The trampoline under each eval loop is named after the Python frame it runs.
        trampolines = trampolines_with_python_frames(output)
        assert [python for _, python in trampolines] == expected_recursion(depth), output
        assert all(name == python[:2] for name, python in trampolines), output


def _check_mixed(output, depth):
    found = python_frames_with_parents(output, mixed=True)
    assert [entry for entry, _ in found] == expected_recursion(depth), output
    assert all(parent == EVAL for _, parent in found), output


@pytest.mark.parametrize("version, perf",
                         [(v, False) for v in VERSIONS] + [(v, True) for v in PERF_VERSIONS],
                         ids=VERSIONS + [f"{v}-perf" for v in PERF_VERSIONS])
def test_python_frames_live_and_core(gdb, tmp_path, version, perf):
    python = python_of(version)
    options = ["-X", "perf"] if perf else []
    core = tmp_path / "python.core"
    live = run_gdb(gdb, ["run", PRINT_PID, "bt", "py-mixed-bt", f"gcore {core}"],
                   [python, *options, RECURSE])
    try:
        bt, _, mixed = live.partition("Thread 1 (LWP")
        _check_bt(bt, 3, perf)
        _check_mixed(mixed, 3)
        assert "[holds the GIL]" in mixed
        from_core = run_gdb(gdb, ["bt", "py-mixed-bt"], [python], core=core)
        bt, _, mixed = from_core.partition("Thread 1 (LWP")
        _check_bt(bt, 3, perf)
        _check_mixed(mixed, 3)
    finally:
        remove_perf_map(live)


@pytest.mark.parametrize("version", VERSIONS)
def test_thousand_deep_recursion(gdb, version):
    output = run_gdb(gdb, ["run", "bt", "py-mixed-bt --python-only"],
                     [python_of(version), RECURSE, "1000"])
    bt, _, python_only = output.partition("Thread 1 (LWP")
    _check_bt(bt, 1000, perf=False)
    lines = [row.strip() for row in python_only.splitlines() if row.strip().startswith("[py]")]
    expected = [f"[py] {f} ({file}:{line})" for f, file, line in expected_recursion(1000)]
    assert lines == expected


def test_stripped_interpreter_uses_debug_offsets(gdb, tmp_path):
    """3.13 without symbol tables or DWARF: _Py_DebugOffsets alone give Python frames
    (matched to eval frames by counting, since the frame variable is unreadable)."""
    python = pyenv_python("3.13.0")
    prefix = python.parent.parent
    library = prefix / "lib" / "libpython3.13.so.1.0"
    stripped = tmp_path / "lib"
    stripped.mkdir()
    shutil.copy2(library, stripped / library.name)
    subprocess.run(["strip", "--strip-all", str(stripped / library.name)], check=True)
    shutil.copy2(python, tmp_path / python.name)
    subprocess.run(["strip", "--strip-all", str(tmp_path / python.name)], check=True)
    env = [f"set environment LD_LIBRARY_PATH {stripped}", f"set environment PYTHONHOME {prefix}"]
    output = run_gdb(gdb, ["run", "bt", "py-mixed-bt"], [tmp_path / python.name, RECURSE],
                     before=env)
    assert str(stripped / library.name) in run_gdb(
        gdb, ["run", "info sharedlibrary"], [tmp_path / python.name, RECURSE], before=env)
    bt, _, mixed = output.partition("Thread 1 (LWP")
    _check_bt(bt, 3, perf=False)
    _check_mixed(mixed, 3)


def test_json_output_follows_the_schema(gdb):
    schema = json.loads((REPO / "docs" / "py-mixed-bt.schema.json").read_text())
    output = run_gdb(gdb, ["run", "echo JSON-START\\n", "py-mixed-bt --json",
                           "echo JSON-END\\n", "echo JSON-START\\n",
                           "py-mixed-bt --json --python-only --all-threads", "echo JSON-END\\n"],
                     [pyenv_python("3.12.1"), RECURSE])
    documents = re.findall(r"JSON-START\n(.*?)JSON-END", output, re.S)
    assert len(documents) == 2, output
    for text in documents:
        document = json.loads(text)
        jsonschema.validate(document, schema)
        thread = document["threads"][0]
        functions = [(f["function"], f["line"]) for f in thread["python"]]
        expected = [(f, line) for f, _, line in expected_recursion(3)]
        assert functions == expected
    mixed = json.loads(documents[0])["threads"][0]["frames"]
    nested = [(p["function"], p["line"]) for f in mixed for p in f["python"]]
    assert nested == [(f, line) for f, _, line in expected_recursion(3)]
    assert all(f["kind"] == "eval" for f in mixed if f["python"])


def test_unsupported_python_is_one_clear_line(gdb):
    output = run_gdb(gdb, ["break main", "run", "py-mixed-bt", "bt 1"],
                     [pyenv_python("3.10.13")])
    assert "py-mixed-bt: CPython 3.10 is not supported" in output


def test_py_mixed_bt_help_and_errors(gdb):
    output = run_gdb(gdb, ["help py-mixed-bt", "py-mixed-bt",
                           "py-mixed-bt --python-only --native-last"])
    assert ("Usage: py-mixed-bt [--all-threads] [--json] [--python-only | --native-last]"
            in output)
    assert "argument --native-last: not allowed with argument --python-only" in output
    assert "py-mixed-bt: no process: run a program or load a core file first." in output
    output = run_gdb(gdb, ["break main", "run", "py-mixed-bt --bogus"],
                     [pyenv_python("3.12.1"), RECURSE])
    assert "unrecognized arguments: --bogus" in output


THREADS = REPO / "tests" / "fixtures" / "python" / "three_threads.py"
_HEADING = re.compile(r'^Thread \d+ \(LWP \d+\) "([^"]+)"( \[holds the GIL\])?:$')


def _threads(output):
    """{python thread name: (holds GIL, [(function, line), ...])} from py-mixed-bt -a -p."""
    threads, current = {}, None
    for line in output.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1)
            threads[current] = (bool(heading.group(2)), [])
            continue
        frame = re.match(r"^\s+\[py\] (\S+) \((.+):(\d+)\)$", line)
        if frame and current is not None:
            threads[current][1].append((frame.group(1), frame.group(2), int(frame.group(3))))
    return threads


def _check_threads(output):
    lines = marks(THREADS)
    threads = _threads(output)
    assert set(threads) == {"MainThread", "sleeper", "spinner", "waiter"}, output
    assert [name for name, (gil, _) in threads.items() if gil] == ["MainThread"], output
    main = threads["MainThread"][1]
    assert main == [("main", str(THREADS), lines["main"]),
                    ("<module>", str(THREADS), lines["module"])], output
    assert threads["sleeper"][1][0] == ("sleeper", str(THREADS), lines["sleeper"]), output
    assert threads["waiter"][1][0] == ("waiter", str(THREADS), lines["waiter"]), output
    spinner = [f for f, file, _ in threads["spinner"][1] if file == str(THREADS)]
    assert "spinner" in spinner, output
    for name in ("sleeper", "spinner", "waiter"):
        assert threads[name][1][-1][0] == "Thread._bootstrap", output


@pytest.mark.parametrize("version", VERSIONS + ["3.13-jit", "3.14-jit"])
def test_all_threads_with_names_and_the_gil(gdb, tmp_path, version):
    """One thread sleeps in C, one spins in a hot loop (JIT code on the JIT builds), one
    waits on a lock, and the main thread holds the GIL."""
    if version.endswith("-jit"):
        python, jit = jit_python(version[:-len("-jit")]), ["set environment PYTHON_JIT=1"]
    else:
        python, jit = python_of(version), []
    core = tmp_path / "threads.core"
    command = "py-mixed-bt --all-threads --python-only"
    live = run_gdb(gdb, [*jit, "run", command, "echo MIXED\\n", "py-mixed-bt --all-threads",
                         f"gcore {core}"], [python, THREADS])
    python_only, _, mixed = live.partition("MIXED\n")
    _check_threads(python_only)
    _check_threads(mixed)   # the mixed listing names the same Python frames
    _check_threads(run_gdb(gdb, [command], [python], core=core))


def test_disable_frame_filter_removes_python_frames(gdb):
    output = run_gdb(gdb, ["run", "disable frame-filter global jit-unwind", "bt"],
                     [pyenv_python("3.12.1"), RECURSE])
    assert "[py]" not in output
    assert re.search(rf"^#\d+ .*{EVAL} ", output, re.M), output


def test_py_mixed_bt_keeps_the_selected_thread_and_frame(gdb, tmp_path):
    """Listing every thread's native frames switches between the threads: afterwards
    the user's thread and frame are selected again; --python-only switches none."""
    python = pyenv_python("3.12.1")
    core = tmp_path / "threads.core"
    run_gdb(gdb, ["run", f"gcore {core}"], [python, THREADS])
    shown = ["frame", "thread", "echo @END\\n"]
    output = run_gdb(gdb, ["thread 2", "frame 1", "echo @BEFORE\\n", *shown,
                           "py-mixed-bt --all-threads", "echo @AFTER\\n", *shown,
                           "py-mixed-bt --all-threads --python-only", "echo @ONLY\\n",
                           *shown], [python], core=core)

    def selection(after):
        shown = output.split(f"@{after}\n")[1].split("\n@")[0]
        return [line for line in shown.splitlines() if line.startswith(("#", "[Current"))]

    before = selection("BEFORE")
    assert before[0].startswith("#1 ") and before[1].startswith("[Current thread is 2 "), output
    assert selection("AFTER") == before, output
    assert selection("ONLY") == before, output
