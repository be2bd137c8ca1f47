"""Edge cases a user meets in real incidents, under GDB 13 and 18 (issue 10, part 2):
CPython stopped before its runtime exists and while it finalizes, threads created but
not started or still starting, subinterpreters, programs without Python, stripped
binaries.  Each test asserts what the user sees: no traceback (run_gdb checks), the
same true frames as plain GDB or more, and a clear message where Python frames cannot
be shown.  The JIT-code cases (perf maps, code freed and reused, cores) are in
test_edge_cases_jit.py."""

import json
import re
import shutil
import subprocess

import jsonschema
import pytest

from tests.jit_python import CACHE, INTERPRETERS, fixture_python, jit_python
from tests.python_expect import RECURSE, expected_recursion, python_frames_with_parents
from tests.support import (PRINT_PID, REPO, fixture_binary, parse_backtrace, pyenv_python,
                           remove_perf_map, run_gdb)

SCHEMA = json.loads((REPO / "docs" / "py-mixed-bt.schema.json").read_text())
PENDING = "set breakpoint pending on"  # pyenv's CPython: libpython is loaded at run
HEADING = re.compile(r"^Thread \d+ \(LWP \d+\)", re.M)
# "Python Exception", "Traceback" are checked by run_gdb itself.
NOT_INITIALISED = "note: the CPython runtime is not initialised yet"
NO_INTERPRETER = "note: the CPython runtime has no interpreter"


def _python(version):
    """The 3.13/3.14 test interpreters (static libpython) or pyenv's 3.12 (shared)."""
    return fixture_python(version) if version in INTERPRETERS else pyenv_python(version)


def _script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _names(output):
    return [frame.function for frame in parse_backtrace(output)]


def _json(output, marker="JSON-FOLLOWS"):
    """The py-mixed-bt --json document printed after ``echo MARKER``."""
    text = output.split(marker + "\n", 1)[1]
    end = text.index("\n}") + 2
    document = json.loads(text[:end])
    jsonschema.validate(document, SCHEMA)
    return document


def _same_frames_as_plain_gdb(gdb, commands, program, early=()):
    """bt with the plugin and without it; asserts the plugin shows the same frames."""
    ours = run_gdb(gdb, [*commands, "bt"], program, early=early)
    plain = run_gdb(gdb, [*commands, "bt"], program, plugin=False, early=early)
    assert _names(ours) == _names(plain) != [], f"{ours}\n---- plain GDB:\n{plain}"
    return ours


# -- start-up and finalization ----------------------------------------------------------

@pytest.mark.parametrize("function", ["main", "_PyRuntime_Initialize",
                                      "Py_InitializeFromConfig"])
@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_stopped_before_the_runtime_is_initialised(gdb, version, function):
    python = _python(version)
    commands = [PENDING, f"break {function}", "run"]
    bt = _same_frames_as_plain_gdb(gdb, commands, [python, "-c", "pass"])
    assert _names(bt)[0] == function, bt
    output = run_gdb(gdb, [*commands, "py-mixed-bt", "info jit-regions",
                           "echo JSON-FOLLOWS\\n", "py-mixed-bt --json"],
                     [python, "-c", "pass"])
    # 3.13+ say which it is through _PyRuntime._finalizing; 3.12 cannot tell.
    assert (NOT_INITIALISED if version in INTERPRETERS else NO_INTERPRETER) in output, output
    assert "[no Python]" in output and "[py]" not in output, output
    assert "No JIT regions" in output, output
    document = _json(output)
    assert document["runtime_note"].startswith(("the CPython runtime is not initialised",
                                                "the CPython runtime has no interpreter"))
    assert [t["python"] for t in document["threads"]] == [[]]


@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_stopped_at_the_first_instruction(gdb, version):
    """starti: the dynamic loader has not run yet; pyenv's libpython is not mapped."""
    python = _python(version)
    _same_frames_as_plain_gdb(gdb, ["starti"], [python, "-c", "pass"])
    output = run_gdb(gdb, ["starti", "py-mixed-bt", "info jit-regions"],
                     [python, "-c", "pass"])
    if version in INTERPRETERS:  # _PyRuntime is in the executable, statically set up
        assert NOT_INITIALISED in output, output
    else:
        # The native frames, after a note saying why there are no Python frames
        assert "note: no _PyRuntime symbol" in output, output
        assert "libpython is not loaded yet" in output, output
    assert "No JIT regions" in output, output


def test_stopped_in_finalization(gdb):
    """Py_FinalizeEx has marked the runtime finalizing (3.14: _PyGC_CollectNoFail runs
    from finalize_modules), then _PyRuntime_Finalize deleted every interpreter."""
    python = jit_python("3.14")
    commands = ["break _PyGC_CollectNoFail", "run"]
    _same_frames_as_plain_gdb(gdb, commands, [python, "-c", "pass"])
    output = run_gdb(gdb, [*commands, "py-mixed-bt", "info jit-regions",
                           "delete", "break _PyRuntime_Finalize", "continue",
                           "echo FINALIZED\\n", "bt", "py-mixed-bt --all-threads",
                           "info jit-regions"], [python, "-c", "pass"])
    finalizing, finalized = output.split("FINALIZED\n", 1)
    assert "note: CPython is finalizing" in finalizing, output
    assert "_PyGC_CollectNoFail" in finalizing
    assert "note: CPython has finalized its runtime: no interpreter is left" in finalized
    assert "[no Python]" in finalized and "[py]" not in finalized, finalized
    assert "_PyRuntime_Finalize" in _names(finalized), finalized


ATEXIT_KILL = """\
import atexit, os, signal
def bye():
    os.kill(os.getpid(), signal.SIGTRAP)
atexit.register(bye)
"""


@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_stopped_in_an_atexit_handler(gdb, tmp_path, version):
    script = _script(tmp_path, "atexit_kill.py", ATEXIT_KILL)
    program = [_python(version), script]
    output = _same_frames_as_plain_gdb(gdb, ["run"], program)
    bt = python_frames_with_parents(output)
    assert [entry[:2] for entry, _ in bt] == [("bye", str(script))], output
    mixed = run_gdb(gdb, ["run", "py-mixed-bt"], program)
    assert [e[:2] for e, _ in python_frames_with_parents(mixed, mixed=True)] == \
        [("bye", str(script))], mixed
    assert "note:" not in mixed, mixed  # atexit handlers run before finalizing starts


# -- threads and subinterpreters ---------------------------------------------------------

NOT_STARTED = """\
import os, signal, threading, time
t = threading.Thread(target=time.sleep, args=(100,), name="never-started")
def stop_here():
    os.kill(os.getpid(), signal.SIGTRAP)
stop_here()
"""


@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_thread_created_but_not_started(gdb, tmp_path, version):
    script = _script(tmp_path, "not_started.py", NOT_STARTED)
    program = [_python(version), script]
    output = _same_frames_as_plain_gdb(gdb, ["run"], program)
    assert [e[0] for e, _ in python_frames_with_parents(output)] == ["stop_here", "<module>"]
    mixed = run_gdb(gdb, ["run", "py-mixed-bt --all-threads"], program)
    assert len(HEADING.findall(mixed)) == 1, mixed  # no thread state, no OS thread
    assert "never-started" not in mixed, mixed
    assert [e[0] for e, _ in python_frames_with_parents(mixed, mixed=True)] == \
        ["stop_here", "<module>"], mixed


STARTING = """\
import threading
t = threading.Thread(target=print, args=("started",), name="starting")
t.start()
t.join()
"""


@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_thread_in_the_middle_of_starting(gdb, tmp_path, version):
    """Stopped in the new thread's thread_run: its OS thread exists, its thread state is
    not bound to it yet; the starting thread waits in Thread.start."""
    script = _script(tmp_path, "starting.py", STARTING)
    program = [_python(version), script]
    commands = [PENDING, "break thread_run", "run"]
    _same_frames_as_plain_gdb(gdb, commands, program)
    output = run_gdb(gdb, [*commands, "py-mixed-bt --all-threads", "echo JSON-FOLLOWS\\n",
                           "py-mixed-bt --all-threads --json", "thread 1", "bt"], program)
    headings = HEADING.findall(output)
    assert len(headings) == 2, output
    starting = output.split("Thread 2 (LWP", 1)[1].split("JSON-FOLLOWS", 1)[0]
    assert "[no Python]" in starting and "thread_run" in starting, output
    assert "Thread.start" in output.split("Thread 2 (LWP", 1)[0], output
    document = _json(output)
    assert [len(t["frames"]) > 0 for t in document["threads"]] == [True, True]
    assert "[py] Thread.start () at" in output.split("JSON-FOLLOWS", 1)[1], output


SUBINTERPRETER = """\
import sys
code = '''
import os, signal
def inner_sub():
    os.kill(os.getpid(), signal.SIGTRAP)
inner_sub()
'''
def outer_main():
    if sys.version_info >= (3, 14):
        from concurrent import interpreters
        interpreters.create().exec(code)
    elif sys.version_info >= (3, 13):
        import _interpreters
        _interpreters.exec(_interpreters.create(), code)
    else:
        import _xxsubinterpreters as _interpreters
        _interpreters.run_string(_interpreters.create(), code)
outer_main()
"""


@pytest.mark.parametrize("version", ["3.14", "3.13", "3.12.1"])
def test_code_running_in_a_subinterpreter(gdb, tmp_path, version):
    """The main thread runs a subinterpreter's code: the subinterpreter's frames under
    the inner eval loop, the main interpreter's (outer_main) under the outer one."""
    script = _script(tmp_path, "subinterpreter.py", SUBINTERPRETER)
    program = [_python(version), script]
    output = _same_frames_as_plain_gdb(gdb, ["run"], program)
    mixed = run_gdb(gdb, ["run", "py-mixed-bt --all-threads"], program)
    for text, is_mixed in ((output, False), (mixed, True)):
        found = python_frames_with_parents(text, mixed=is_mixed)
        functions = [entry[0] for entry, _ in found]
        assert functions[:2] == ["inner_sub", "<module>"], text
        assert functions[-2:] == ["outer_main", "<module>"], text
        assert all(parent == "_PyEval_EvalFrameDefault" for _, parent in found), text
    assert len(HEADING.findall(mixed)) == 1, mixed
    # The two groups are listed under two different eval-loop frames.
    levels = [int(m.group(1)) for m in re.finditer(r"^#(\d+)\s+_PyEval_EvalFrameDefault",
                                                  mixed, re.M)]
    assert len(levels) >= 2, mixed


# -- programs without Python, stripped binaries -------------------------------------------

def test_program_without_python_or_jit_is_left_alone(gdb):
    """deepstack: the plugin prints nothing, GDB prints its own frames (the frame filter
    stays disabled), and no file is opened to look for CPython."""
    program = [fixture_binary("deepstack"), "20"]
    probe = ("python import jit_unwind.elf.lookup as e; "
             "print('elf-files-opened', len(e._files))")
    ours = run_gdb(gdb, ["run", "bt", "info frame-filter", probe], program)
    plain = run_gdb(gdb, ["run", "bt"], program, plugin=False)

    def frame_lines(text):
        return [re.sub(r"0x[0-9a-f]+", "ADDR", line) for line in text.splitlines()
                if line.startswith("#")]

    assert frame_lines(ours) == frame_lines(plain) != [], ours
    assert re.search(r"^\s*100\s+No\s+jit-unwind$", ours, re.M), ours
    assert "elf-files-opened 0" in ours, ours
    extra = set(ours.splitlines()) - set(plain.splitlines())
    assert not [line for line in extra if "jit" in line.lower() and "jit-unwind" not in line
                or line.startswith("warning")], extra


def _strip(source, target):
    shutil.copy(source, target)
    subprocess.run(["strip", str(target)], check=True)
    return target


def _true_frames(output):
    """Frames that are code: a name that is no data symbol, or a JIT frame."""
    return [name for name in _names(output)
            if not name.startswith("??") and name != "_PyRuntime"]


@pytest.mark.parametrize("mode", ["fp", "frameless", "mixed"])
def test_stripped_toy_jit(gdb, tmp_path, mode):
    toyjit = _strip(fixture_binary("toyjit"), tmp_path / "toyjit")
    program = [toyjit, mode, "2", "sigtrap"]
    ours = run_gdb(gdb, ["run", "bt"], program)
    plain = run_gdb(gdb, ["run", "bt"], program, plugin=False)
    names = _names(ours)
    jit = [name for name in names if name.startswith("[jit 0x")]
    assert len(jit) == {"fp": 3, "frameless": 6, "mixed": 4}[mode], ours
    assert "__libc_start_main_impl" in names, ours  # through every JIT frame to the start
    assert not any("unwind stopped" in name or "guess" in name for name in names), ours
    native = [name for name in _true_frames(ours) if not name.startswith("[jit")]
    assert len(native) >= len(_true_frames(plain)), f"{ours}\n---- plain GDB:\n{plain}"


@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_stripped_python_launcher(gdb, tmp_path, version):
    """A stripped copy of the interpreter (3.14: libpython inside it, _PyRuntime found
    through its .PyRuntime section; pyenv 3.12: a launcher of libpython3.12.so), run
    with -X perf: Python frames and trampolines as with the original."""
    source = _python(version)
    python = _strip(source, tmp_path / source.name)
    early = []
    if version in INTERPRETERS:  # the copy cannot find its standard library by itself
        early = [f"set environment PYTHONHOME={CACHE / INTERPRETERS[version][0]}"]
    program = [python, "-X", "perf", RECURSE]
    ours = run_gdb(gdb, ["run", "bt", "py-mixed-bt", PRINT_PID], program, early=early)
    plain = run_gdb(gdb, ["run", "bt", PRINT_PID], program, plugin=False, early=early)
    remove_perf_map(ours)
    remove_perf_map(plain)
    bt, _, mixed = ours.partition("Thread 1 (LWP")
    assert [e for e, _ in python_frames_with_parents(bt)] == expected_recursion(3), ours
    assert [e for e, _ in python_frames_with_parents(mixed, mixed=True)] == \
        expected_recursion(3), ours
    names = _names(bt)
    assert names[-1] == "_start" and "py::recurse:" + str(RECURSE) in names, bt
    assert len(_true_frames(bt)) >= len(_true_frames(plain)), f"{bt}\n---- plain:\n{plain}"
