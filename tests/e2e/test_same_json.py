"""``py-mixed-bt --json --all-threads`` of one core file is the same document in GDB 18,
LLDB 23 and LLDB 19, and ``jit-unwind core --json --debugger none`` (no debugger: the
core read by ``jit_unwind.coreread``) prints it too, addresses and all: one core (GDB's
gcore) per scenario, the toy JIT's mixed mode with a perf map, CPython 3.14's JIT,
CPython 3.12 with ``-X perf``.

One kind of frame differs by design: both debuggers make "tail-call frames" from the
DWARF call-site information of a function that ends with a jump to another (CPython's
``run_eval_code_obj``, ``pymain_main``, glibc's ``__pthread_kill_internal``), each by its
own rules: GDB makes all three here, LLDB only the first two (in its own frames; a
frame provider cannot make any; ``--debugger none`` reads no call-site information and
makes none).  The test asks each debugger which frames those are, checks that LLDB's are
among GDB's (same function and pc), and compares the documents without them (levels
renumbered); every other field is compared as it is: ``--debugger none``'s names come
from DWARF (linkage names, inlined functions) and the symbol tables, its files and
lines from the line tables, as GDB's.
"""

import copy
import json
import os
import re
import subprocess
import sys

import pytest

from tests.jit_python import jit_python
from tests.driver import driver
from tests.python_expect import SCRIPTS
from tests.support import (GDB_BINARIES, PRINT_PID, REPO, fixture_binary, pyenv_python,
                           remove_perf_map, run_gdb)

SCRIPT = SCRIPTS / "raise_in_hot_loop.py"
COMMAND = "py-mixed-bt --json --all-threads"

# name -> (program and arguments, environment for the run)
SCENARIOS = {
    "toyjit-mixed-perf-map": (lambda: [fixture_binary("toyjit"), "mixed", "3", "sigtrap",
                                       "--perf-map"], {}),
    "cpython-3.14-jit": (lambda: [jit_python("3.14"), SCRIPT], {"PYTHON_JIT": "1"}),
    "cpython-3.12-perf": (lambda: [pyenv_python("3.12.1"), "-X", "perf", SCRIPT], {}),
}

TAIL_CALLS = '''
import gdb, json
levels = {}
for thread in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
    thread.switch()
    found, frame = [], gdb.newest_frame()
    while frame is not None and frame.level() < 10000:
        if frame.type() == gdb.TAILCALL_FRAME:
            found.append(frame.level())
        try:
            frame = frame.older()
        except gdb.error:
            break
    levels[thread.num] = found
print("tail-calls " + json.dumps(levels))
'''


@pytest.fixture(scope="module", params=list(SCENARIOS))
def core(request, tmp_path_factory):
    """(program, core file) of a scenario, made once by GDB's gcore; its perf map stays
    until the module's tests are done."""
    make_program, environment = SCENARIOS[request.param]
    program = make_program()
    core = tmp_path_factory.mktemp(request.param) / "program.core"
    setup = [f"set environment {name}={value}" for name, value in environment.items()]
    output = run_gdb(GDB_BINARIES["gdb18"], [*setup, "run", PRINT_PID, f"gcore {core}"],
                     program, plugin=False)
    assert core.exists(), output
    yield program, core
    remove_perf_map(output)


TEXT = "py-mixed-bt --all-threads"


def gdb_document(program, core, tmp_path, text=False):
    """GDB 18's document of the core, its tail-call frames' levels by thread number,
    and (``text``) its text."""
    script = tmp_path / "tail_calls.py"
    script.write_text(TAIL_CALLS)
    transcript = driver("gdb18").open_core(program, core,
                                           [COMMAND, TEXT, f"source {script}"])
    tail_calls = json.loads(re.search(r"^tail-calls (.*)$", transcript.whole, re.M).group(1))
    levels = {int(number): levels for number, levels in tail_calls.items()}
    if text:
        return transcript.document(COMMAND), levels, transcript.output(TEXT)
    return transcript.document(COMMAND), levels


def text_without_tail_calls(text, tail_calls):
    """py-mixed-bt's text without the frames at ``tail_calls`` (levels by thread
    number), the others renumbered."""
    kept, thread, level, dropping = [], None, 0, False
    for line in text.strip("\n").splitlines():
        heading = re.match(r"Thread (\d+) ", line)
        frame = re.match(r"#(\d+) +(.*)$", line)
        if heading:
            thread, level, dropping = int(heading.group(1)), 0, False
        elif frame:
            dropping = int(frame.group(1)) in tail_calls.get(thread, ())
            if dropping:
                continue
            line = f"#{level:<3} {frame.group(2)}"
            level += 1
        elif dropping and line.startswith(" "):
            continue
        kept.append(line)
    return "\n".join(kept)


def without_tail_calls(document, is_tail_call):
    """The document without the frames ``is_tail_call(thread number, frame)`` says a
    debugger made from call-site information, and the (pc, function) of those."""
    removed = set()
    for thread in document["threads"]:
        kept = []
        for frame in thread["frames"]:
            if is_tail_call(thread["number"], frame):
                assert frame["python"] == [], frame  # no Python frames are lost
                removed.add((frame["pc"], frame["function"]))
                continue
            frame["level"] = len(kept)
            kept.append(frame)
        thread["frames"] = kept
    return document, removed


# LLDB's tail-call frames ("artificial"), by pc.
LLDB_TAIL_CALLS = ("script import json; print('tail-calls ' + json.dumps([f.GetPC() "
                   "for t in lldb.debugger.GetSelectedTarget().GetProcess() for f in t "
                   "if f.IsArtificial()]))")


def lldb_without_tail_calls(name, program, core):
    """The document of LLDB ``name`` on ``core``, without LLDB's tail-call frames."""
    transcript = driver(name).open_core(program, core, [COMMAND, LLDB_TAIL_CALLS])
    pcs = set(json.loads(re.search(r"^tail-calls (.*)$", transcript.whole, re.M).group(1)))
    return without_tail_calls(transcript.document(COMMAND),
                              lambda _number, frame: frame["pc"] in pcs)


def differences(ours, theirs):
    """Where two documents differ, frame by frame, for the failure message."""
    lines = [f"{key}: {ours[key]!r} != {theirs.get(key)!r}" for key in ours
             if key != "threads" and ours[key] != theirs.get(key)]
    for mine, other in zip(ours["threads"], theirs["threads"]):
        lines += [f"thread {mine['number']} {key}: {mine[key]!r} != {other.get(key)!r}"
                  for key in mine if key != "frames" and mine[key] != other.get(key)]
        for index in range(max(len(mine["frames"]), len(other["frames"]))):
            a = mine["frames"][index] if index < len(mine["frames"]) else None
            b = other["frames"][index] if index < len(other["frames"]) else None
            if a != b:
                lines.append(f"  #{index}: {a}\n   != {b}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def gdb_expected(core, tmp_path_factory):
    """GDB 18's document of the core without its tail-call frames, and (pc, function)
    of those."""
    program, core_file = core
    gdb, tail_calls, text = gdb_document(program, core_file, tmp_path_factory.mktemp("gdb"),
                                         text=True)
    expected, gdb_tail_calls = without_tail_calls(
        gdb, lambda number, frame: frame["level"] in tail_calls.get(number, ()))
    frames = expected["threads"][0]["frames"]
    assert len(frames) > 8 and any(f["kind"] == "jit" for f in frames), gdb
    return expected, gdb_tail_calls, text_without_tail_calls(text, tail_calls)


def test_gdb_and_lldb_give_the_same_document(core, gdb_expected):
    program, core_file = core
    expected, gdb_tail_calls, _ = gdb_expected
    for name in ("lldb23", "lldb19"):
        document, lldb_tail_calls = lldb_without_tail_calls(name, program, core_file)
        assert lldb_tail_calls <= gdb_tail_calls, name
        assert document == expected, f"{name}:\n" + differences(document, expected)


def no_debugger(*args, text=False, debugger="none"):
    """``jit-unwind core --debugger none --json ARGS`` (``text``: without --json; another
    ``debugger``) as a user runs it: its exit status, its JSON document (None when it
    printed none; the text) and its stderr."""
    result = subprocess.run([sys.executable, "-m", "jit_unwind", "core", "--debugger", debugger,
                             *([] if text else ["--json"]), *map(str, args)],
                            capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO / "plugin")),
                            timeout=300)
    output = result.stdout if text else json.loads(result.stdout) if result.stdout else None
    return result.returncode, output, result.stderr


def test_without_a_debugger_the_document_is_gdbs(core, gdb_expected):
    program, core_file = core
    expected = copy.deepcopy(gdb_expected[0])
    has_python = any(thread["python"] for thread in expected["threads"])
    status, document, errors = no_debugger(core_file, program[0])
    assert status == (0 if has_python else 1), errors  # 1: "no Python frames found"
    assert document == expected, "--debugger none:\n" + differences(document, expected)
    # The text: GDB's py-mixed-bt, line for line (its tail-call frames left out).
    status, text, errors = no_debugger(core_file, program[0], text=True)
    assert text.strip("\n") == gdb_expected[2], errors
    # --python-only: the same threads and Python frames, without the native walk.
    status, python_only, errors = no_debugger("--python-only", core_file, program[0])
    if not has_python:
        assert status == 1 and "Python" in errors, errors
        return
    for thread in expected["threads"]:
        del thread["frames"], thread["stop_reason"]
    assert status == 0 and python_only == expected, errors


@pytest.mark.parametrize("debugger", ["gdb", "gdb18"])
def test_python_only_through_gdb_is_the_same_document(core, gdb_expected, debugger):
    """``--python-only`` runs GDB without reading any DWARF (``--readnever``): the
    threads and Python frames are still GDB's full run's, and the text the same as
    ``--debugger none``'s."""
    program, core_file = core
    expected = copy.deepcopy(gdb_expected[0])
    for thread in expected["threads"]:
        del thread["frames"], thread["stop_reason"]
    has_python = any(thread["python"] for thread in expected["threads"])
    status, document, errors = no_debugger("--python-only", core_file, program[0],
                                           debugger=debugger)
    if not has_python:
        assert status == 1 and "Python" in errors, errors
        return
    assert status == 0 and document == expected, errors
    status, text, errors = no_debugger("--python-only", core_file, program[0], text=True,
                                       debugger=debugger)
    _, without, _ = no_debugger("--python-only", core_file, program[0], text=True)
    assert status == 0 and "[py] " in text and text == without, errors
