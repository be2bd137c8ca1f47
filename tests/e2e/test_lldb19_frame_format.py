"""Debian's lldb-19 has no frame providers: its plain ``bt`` names JIT frames through
``frame-format`` (``jit-unwind frame-format``), with the names py-mixed-bt gives them;
every other frame line is LLDB's own, and turning the setting off gives LLDB's format
back.  Live processes and core files; the toy JIT and CPython 3.14's JIT.  LLDB 23
(frame providers) keeps its formats."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.jit_python import jit_python
from tests.lldb_driver import LLDB_INIT, run_lldb
from tests.python_expect import SCRIPTS
from tests.support import (GDB_BINARIES, PRINT_PID, assert_no_python_failure, fixture_binary,
                           remove_perf_map, run_gdb)

LLDB19 = Path("/usr/bin/lldb-19")
SCRIPT = SCRIPTS / "raise_in_hot_loop.py"
LABEL = "jit_unwind_frame_label"
LLDB_PID = ("script print('inferior-pid', "
            "lldb.debugger.GetSelectedTarget().GetProcess().GetProcessID())")
# What the test reads: py-mixed-bt's names (on a core file, the first jit-unwind
# command loads the symbol file LLDB unwinds JIT code with), bt with our format, bt
# with LLDB's.
COMMANDS = ["py-mixed-bt --json", "bt", "jit-unwind frame-format off", "bt",
            "settings show frame-format", "settings show thread-format"]
FRAME_LINE = re.compile(r"^\s*\*?\s*frame #(\d+): (0x[0-9a-f]+)(.*)$")


def run_lldb19(tmp_path, target_lines, commands):
    """lldb-19 reading its commands from a file; the formats are shown before the
    import, for comparison."""
    assert LLDB19.exists(), "lldb-19 is missing: run `make apt-deps`"
    script = tmp_path / "commands.lldb"
    script.write_text("\n".join(["settings show frame-format",
                                 "settings show thread-format",
                                 f"command script import {LLDB_INIT}", *target_lines,
                                 *commands, "quit"]) + "\n")
    result = subprocess.run([str(LLDB19), "--no-lldbinit", "-s", str(script)],
                            capture_output=True, text=True, errors="replace", timeout=300,
                            stdin=subprocess.DEVNULL)
    output = result.stdout + result.stderr
    remove_perf_map(output)
    assert_no_python_failure(output)
    assert "error: module importing failed" not in output, output
    assert "<error:" not in output, output
    return output


def live(program, environment=()):
    return [f"file {program[0]}",
            "settings set -- target.run-args " + " ".join(map(str, program[1:])),
            *[f"settings set target.env-vars {name}={value}"
              for name, value in environment],
            "process launch -i /dev/null", LLDB_PID]


def section(output, command, occurrence=0):
    """What ``command`` printed (its ``occurrence``-th run)."""
    return output.split(f"(lldb) {command}\n")[occurrence + 1].split("(lldb) ")[0]


def frame_lines(text):
    """{frame index: (pc, rest of the line)} of a bt."""
    lines = {}
    for line in text.splitlines():
        match = FRAME_LINE.match(line)
        if match:
            lines[int(match.group(1))] = (int(match.group(2), 16), match.group(3))
    return lines


def check_bt(output, expect_names, min_jit=1):
    """bt's JIT lines carry py-mixed-bt's names, its other lines are LLDB's own (as
    after ``jit-unwind frame-format off``), and off gives LLDB's formats back.  Returns
    the JIT names shown (at least ``min_jit``)."""
    ours, lldbs = frame_lines(section(output, "bt")), frame_lines(section(output, "bt", 1))
    document = json.JSONDecoder().raw_decode(section(output, "py-mixed-bt --json"))[0]
    jit_names = {frame["pc"]: frame["function"]
                 for frame in document["threads"][0]["frames"] if frame["kind"] == "jit"}
    assert ours.keys() == lldbs.keys() and len(ours) >= 4, output
    shown = []
    for index, (pc, text) in ours.items():
        if pc in jit_names:
            assert text == " " + jit_names[pc], (index, output)  # no module`symbol
            assert lldbs[index][1] != text, output
            shown.append(jit_names[pc])
        else:
            assert (pc, text) == lldbs[index], (index, output)  # LLDB's own line
    assert len(shown) >= min_jit and all(expect_names(name) for name in shown), output
    for name in ("frame-format", "thread-format"):
        before = output.split(f"(lldb) settings show {name}\n")[1].splitlines()[0]
        after = section(output, f"settings show {name}").splitlines()[0]
        assert after == before and LABEL not in after, output
    return shown


@pytest.mark.parametrize("perf_map", [False, True])
@pytest.mark.parametrize("mode", ["fp", "frameless", "mixed"])
def test_toyjit_live(tmp_path, mode, perf_map):
    program = [fixture_binary("toyjit"), mode, "2", "sigtrap"] + (
        ["--perf-map"] if perf_map else [])
    output = run_lldb19(tmp_path, live(program), COMMANDS + ["kill"])
    if perf_map:  # LLDB unwinds through every JIT frame with our symbol file's .eh_frame
        check_bt(output, lambda name: name.startswith("toy::"), min_jit=2)
    else:  # no symbol file: LLDB's walk ends at the first JIT frame (a frameless one it
        # loses, with its callers: nothing to name)
        check_bt(output, lambda name: re.fullmatch(r"\[jit 0x[0-9a-f]+\+0x[0-9a-f]+\]", name),
                 min_jit=0 if mode == "frameless" else 1)


def test_cpython_jit_live(tmp_path):
    output = run_lldb19(tmp_path, live([jit_python("3.14"), SCRIPT], [("PYTHON_JIT", "1")]),
                        COMMANDS + ["kill"])
    shown = check_bt(output, lambda name: name.startswith("[jit"))
    assert any(name.startswith(f"[jit] hot ({SCRIPT}:") for name in shown), output


def test_setting_on_again(tmp_path):
    """``jit-unwind frame-format on`` after off labels again; ``help jit-unwind`` says
    what it does."""
    program = [fixture_binary("toyjit"), "fp", "1", "sigtrap", "--perf-map"]
    output = run_lldb19(tmp_path, live(program),
                        ["jit-unwind frame-format off", "jit-unwind frame-format on", "bt",
                         "jit-unwind", "help jit-unwind", "kill"])
    assert re.search(r"frame #\d+: 0x[0-9a-f]+ toy::jit_fp$", section(output, "bt"),
                     re.M), output
    assert "frame-format: on" in section(output, "jit-unwind"), output
    assert "frame-format" in section(output, "help jit-unwind"), output


CORES = {
    "toyjit-mixed-perf-map": (lambda: [fixture_binary("toyjit"), "mixed", "3", "sigtrap",
                                       "--perf-map"], {},
                              lambda name: name.startswith("toy::")),
    "toyjit-fp": (lambda: [fixture_binary("toyjit"), "fp", "3", "sigtrap"], {},
                  lambda name: re.fullmatch(r"\[jit 0x[0-9a-f]+\+0x[0-9a-f]+\]", name)),
    "cpython-3.14-jit": (lambda: [jit_python("3.14"), SCRIPT], {"PYTHON_JIT": "1"},
                         lambda name: name.startswith("[jit")),
}


@pytest.mark.parametrize("scenario", list(CORES))
def test_core(tmp_path, scenario):
    make_program, environment, expect_names = CORES[scenario]
    program = make_program()
    core = tmp_path / "program.core"
    setup = [f"set environment {name}={value}" for name, value in environment.items()]
    made = run_gdb(GDB_BINARIES["gdb18"], [*setup, "run", PRINT_PID, f"gcore {core}"],
                   program, plugin=False)
    try:
        assert core.exists(), made
        output = run_lldb19(tmp_path, [f"target create --core {core} {program[0]}"],
                            COMMANDS)
        check_bt(output, expect_names)
    finally:
        remove_perf_map(made)


def test_lldb23_keeps_its_formats():
    """LLDB 23 names JIT frames with its frame provider: the formats stay LLDB's."""
    before = run_lldb(["settings show frame-format", "settings show thread-format"],
                      plugin=False)
    after = run_lldb(["settings show frame-format", "settings show thread-format"])
    assert LABEL not in after
    assert before.split("(lldb) settings show frame-format")[1] == \
        after.split("(lldb) settings show frame-format")[1]


def test_stopped_in_jit_code(tmp_path):
    """Frame 0 in JIT code: the stop's frame line, thread list (thread-format) and bt
    name it."""
    program = [fixture_binary("toyjit"), "fp", "1", "breakpoint", "--perf-map"]
    jit_return = ("script target = lldb.debugger.GetSelectedTarget(); "
                  "target.BreakpointCreateByAddress(target.GetProcess()."
                  "GetSelectedThread().GetFrameAtIndex(2).GetPC())")
    output = run_lldb19(tmp_path, ["breakpoint set -n toy_stop", *live(program)],
                        [jit_return, "continue", "thread list", "bt 2", "kill"])
    stop = section(output, "continue")
    assert re.search(r"^    frame #0: 0x[0-9a-f]+ toy::jit_fp$", stop, re.M), output
    assert re.search(r"^\* thread #1: tid = \d+, 0x[0-9a-f]+ toy::jit_fp, name = ",
                     section(output, "thread list"), re.M), output
    assert re.search(r"^  \* frame #0: 0x[0-9a-f]+ toy::jit_fp$", section(output, "bt 2"),
                     re.M), output
    assert re.search(r"^    frame #1: 0x[0-9a-f]+ toyjit`call_jit\(depth=0\) at toyjit\.c:",
                     section(output, "bt 2"), re.M), output


def test_user_formats_respected(tmp_path):
    """A format set after the import stays the user's when the setting goes off, and
    with on (it has no pc to put a name after); one set back to LLDB's default
    (settings clear) gets the label again with on."""
    program = [fixture_binary("toyjit"), "fp", "1", "sigtrap", "--perf-map"]
    mine = 'settings set thread-format "mine ${thread.index}\\n"'
    output = run_lldb19(tmp_path, live(program),
                        [mine, "jit-unwind frame-format off", "settings show thread-format",
                         "settings clear frame-format", "jit-unwind frame-format on",
                         "bt 5", "settings show thread-format", "kill"])
    assert section(output, "settings show thread-format", 1).startswith(
        'thread-format (format-string) = "mine ${thread.index}\\n"'), output
    assert section(output, "settings show thread-format", 2).startswith(
        'thread-format (format-string) = "mine ${thread.index}\\n"'), output
    assert re.search(r"frame #\d+: 0x[0-9a-f]+ toy::jit_fp$", section(output, "bt 5"),
                     re.M), output
