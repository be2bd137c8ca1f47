"""Issue 19's rough edges, as a user meets them in GDB and LLDB."""

import json
import re
import os
import pty
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from tests.driver import MIXED_JSON as MIXED_JSON_ALL, driver
from tests.jit_python import fixture_python
from tests.lldb_driver import LLDB_INIT, WAIT_FOR_PROVIDER, run_lldb
from tests.support import GDB_BINARIES, GDB_INIT, GDB_TIMEOUT, REPO, run_gdb

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "py-mixed-bt.schema.json"


def test_gdb_refuses_a_jitdump_path_it_cannot_read(gdb, tmp_path):
    """``set jit-unwind jitdump`` refuses a missing file and a directory with an error
    naming why, keeping the old value; ``auto`` (no path) and a readable file are
    accepted.  (An unreadable file: tests/unit/test_settings_check.py, as root reads
    every file.)"""
    good = tmp_path / "jit-1.dump"
    good.write_bytes(b"")
    commands = [f"set jit-unwind jitdump {good}", "set jit-unwind jitdump /nonexistent",
                "show jit-unwind jitdump", f"set jit-unwind jitdump {tmp_path}",
                "show jit-unwind jitdump", "set jit-unwind jitdump", "show jit-unwind jitdump"]
    output = run_gdb(gdb, commands)
    assert "set jit-unwind jitdump: /nonexistent: no such file. " \
           "The setting is unchanged." in output, output
    assert f"set jit-unwind jitdump: {tmp_path}: not a file." in output, output
    assert output.count(f"jit-unwind reads the jitdump file {good} first.") == 2, output
    assert "jit-unwind finds the jitdump file itself." in output, output


def test_lldb_refuses_a_jitdump_path_it_cannot_read(tmp_path):
    good = tmp_path / "jit-1.dump"
    good.write_bytes(b"")
    output = run_lldb([f"jit-unwind jitdump {good}", "jit-unwind jitdump /nonexistent",
                       f"jit-unwind jitdump {tmp_path}", "jit-unwind", "jit-unwind jitdump auto",
                       "jit-unwind", "jit-unwind jitdump on off", "jit-unwind nosuch on"])
    assert f"jit-unwind jitdump: /nonexistent: no such file. It stays {good}." in output, \
        output
    assert f"jit-unwind jitdump: {tmp_path}: not a file. It stays {good}." in output, output
    after_errors, after_auto = output.split("(lldb) jit-unwind jitdump auto\n")
    assert f"jitdump: {good}" in after_errors.split("(lldb) jit-unwind\n")[-1], output
    assert "jitdump: auto" in after_auto, output
    # The usage names the path setting too.
    assert "usage: jit-unwind jitdump PATH|auto" in after_auto, output
    assert "or jit-unwind jitdump PATH|auto. Try" in after_auto, output


def test_gdb_apropos_finds_every_command_and_setting(gdb):
    output = run_gdb(gdb, ["apropos jit-unwind"])
    listed = {line.split(" -- ")[0] for line in output.splitlines() if " -- " in line}
    expected = {"py-mixed-bt", "info jit-regions", "set jit-unwind", "show jit-unwind"}
    for name in ("show-method", "debug", "symbol-file", "jitdump"):
        expected |= {f"set jit-unwind {name}", f"show jit-unwind {name}"}
    assert expected <= listed, output
    assert "py-mixed-bt -- Print the mixed native and Python stack of the selected " \
           "thread." in output, output


# A library whose function between the program's callback and its entry point has no
# symbol once stripped (the first in .text: no exported symbol precedes it), as
# libffi's closure trampolines: GDB's bt says "?? () from libhidden.so".
LIBRARY = r"""
__attribute__((noinline)) static int hidden(int (*callback)(void)) {
    int result = callback();
    return result + 1;
}
int entry(int (*callback)(void)) { return hidden(callback) * 2; }
"""
PROGRAM = r"""
#include <signal.h>
int entry(int (*callback)(void));
__attribute__((noinline)) static int callback(void) { raise(SIGTRAP); return 1; }
int main(void) { return entry(callback) == 4 ? 0 : 1; }
"""


def _build_stripped_library(tmp_path: Path) -> Path:
    (tmp_path / "hidden.c").write_text(LIBRARY)
    (tmp_path / "main.c").write_text(PROGRAM)
    library = tmp_path / "libhidden.so"
    program = tmp_path / "calls_hidden"
    for argv in (["cc", "-shared", "-fPIC", "-O1", "-fno-omit-frame-pointer", "-o", library,
                  tmp_path / "hidden.c"],
                 ["strip", "--strip-all", library],
                 ["cc", "-O1", "-g", "-o", program, tmp_path / "main.c", library,
                  f"-Wl,-rpath,{tmp_path}"]):
        subprocess.run([str(a) for a in argv], check=True)
    return program


@pytest.mark.parametrize("name", ["gdb13", "gdb18", "lldb23"])
def test_py_mixed_bt_names_the_library_of_a_frame_without_a_name(name, tmp_path):
    program = _build_stripped_library(tmp_path)
    library = str(tmp_path / "libhidden.so")
    transcript = driver(name).launch([program], ["bt", "py-mixed-bt", "py-mixed-bt --json"])
    text = transcript.output("py-mixed-bt")
    lines = text.splitlines()
    at_entry = next(i for i, line in enumerate(lines) if " entry" in line)
    # The frame between callback and entry: its pc, then GDB's "?? () from LIBRARY".
    assert " callback" in lines[at_entry - 2], text
    assert lines[at_entry - 1].endswith(f" in ?? () from {library}"), text
    assert lines[at_entry - 1].split()[1].startswith("0x"), text
    document = transcript.document("py-mixed-bt --json")
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    frames = document["threads"][0]["frames"]
    unnamed = [frame for frame in frames if frame.get("library")]
    assert [frame["library"] for frame in unnamed] == [library], frames
    assert unnamed[0]["function"] == hex(unnamed[0]["pc"]), frames


# A program that needs its own standard library (ctypes's _ctypes is an extension module
# of CPython 3.14, absent from the 3.11 the debuggers' wrappers point PYTHONHOME at).
SEES_ITS_ENVIRONMENT = ("import ctypes, os; print('program: ctypes imported, PYTHONPATH',"
                        " os.environ.get('PYTHONPATH'), 'PYTHONHOME', "
                        "os.environ.get('PYTHONHOME'))")
WRAPPER_LINE = ("jit-unwind: programs run without PYTHONHOME, PYTHONPATH, PYTHONNOUSERSITE"
                "{}: {}'s pip wrapper set them for its own Python.")


def _wrapper_run(argv, terminal=False, **variables):
    """Run a debugger (a pip wrapper: .venv/bin/gdb or lldb) as a user does, in the
    environment the tests run in minus what a wrapper may have left in it, plus
    ``variables``; its stdin a terminal (someone typing) or nothing (a script)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHONHOME", "PYTHONPATH", "PYTHONNOUSERSITE",
                                "PYTHONLOADER", "LLDB_DEBUGSERVER"))}
    env.update(variables)
    leader, follower = pty.openpty() if terminal else (None, None)
    try:
        return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                              errors="replace", timeout=GDB_TIMEOUT,
                              stdin=follower if terminal else subprocess.DEVNULL, env=env)
    finally:
        if terminal:
            os.close(leader)
            os.close(follower)


def _through_wrapper(argv, terminal=False, **variables):
    result = _wrapper_run(argv, terminal, **variables)
    return result.stdout + result.stderr


def _assert_program_runs_with_its_own_environment(output, line, plugin):
    runs = [text for text in output.splitlines() if text.startswith("program:")]
    if not plugin:  # the wrapper's PYTHONHOME breaks CPython 3.14: what the plugin fixes
        assert not runs, output
        return
    assert output.count(line) == 1, output  # a terminal session: said once
    assert runs == ["program: ctypes imported, PYTHONPATH None PYTHONHOME None",
                    "program: ctypes imported, PYTHONPATH /users/own PYTHONHOME None"], output


@pytest.mark.parametrize("plugin", [True, False])
def test_gdb_wrapper_environment_stays_out_of_the_program(plugin):
    """gdb-for-pwndbg's wrapper sets PYTHONHOME/PYTHONPATH for GDB's Python 3.11; with
    the plugin loaded a CPython 3.14 run under GDB imports ctypes, and a PYTHONPATH the
    user sets for the program (set environment) still reaches it."""
    argv = [GDB_BINARIES["gdb18"], "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin:
        argv += ["-x", GDB_INIT]
    argv += ["-ex", "run", "-ex", "set environment PYTHONPATH=/users/own", "-ex", "run",
             "--args", fixture_python("3.14"), "-c", SEES_ITS_ENVIRONMENT]
    _assert_program_runs_with_its_own_environment(
        _through_wrapper(argv, terminal=True), WRAPPER_LINE.format("", "GDB"), plugin)


@pytest.mark.parametrize("plugin", [True, False])
def test_lldb_wrapper_environment_stays_out_of_the_program(plugin):
    argv = [REPO / ".venv" / "bin" / "lldb", "--no-lldbinit", "-b"]
    if plugin:
        argv += ["-o", f"command script import {LLDB_INIT}"]
    argv += ["-o", "run", "-o", "settings set target.env-vars PYTHONPATH=/users/own",
             "-o", "run", "--", fixture_python("3.14"), "-c", SEES_ITS_ENVIRONMENT]
    _assert_program_runs_with_its_own_environment(
        _through_wrapper(argv, terminal=True),
        WRAPPER_LINE.format(", PYTHONLOADER_LIBPYTHON", "LLDB"), plugin)


@pytest.mark.parametrize("terminal", [True, False])
@pytest.mark.parametrize("debugger", ["gdb18", "lldb"])
def test_wrapper_notice_only_where_someone_types(debugger, terminal):
    """Said once on stderr in a session on a terminal; a script's run (stdin no terminal,
    e.g. CPython's test_gdb, which fails on any stderr line) gets no extra line, and the
    program's environment is fixed all the same (tests above)."""
    if debugger == "gdb18":
        argv = [GDB_BINARIES["gdb18"], "-nx", "-q", "-batch", "-iex",
                "set debuginfod enabled off", "-x", GDB_INIT, "-ex",
                "python print('only this')"]
    else:
        argv = [REPO / ".venv" / "bin" / "lldb", "--no-lldbinit", "-b", "-o",
                f"command script import {LLDB_INIT}", "-o", "script print('only this')"]
    result = _wrapper_run(argv, terminal)
    assert "jit-unwind: programs run without" not in result.stdout, result.stdout
    assert "only this" in result.stdout, result.stdout
    assert result.stderr.count("jit-unwind: programs run without") == int(terminal), \
        result.stderr
    if debugger == "gdb18" and not terminal:
        assert result.stderr == "", result.stderr


def test_debian_gdb_passes_the_users_python_environment_on():
    """No wrapper: a PYTHONPATH in GDB's environment is the user's, for the program."""
    output = _through_wrapper(
        [GDB_BINARIES["gdb13"], "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
         "-x", GDB_INIT, "-ex", "run", "--args", fixture_python("3.14"), "-c",
         SEES_ITS_ENVIRONMENT], PYTHONPATH="/users/own")
    assert "program: ctypes imported, PYTHONPATH /users/own PYTHONHOME None" in output, output
    assert "jit-unwind: programs run without" not in output, output


# A short script under -X perf: CPython writes hundreds of perf-map entries (one per code
# object run, the import system's included).
PERF_SCRIPT = """\
import os, signal, json, collections


def leaf(n):
    os.kill(os.getpid(), signal.SIGTRAP)
    return n


def middle(n):
    data = json.dumps({"n": n, "c": collections.Counter("abc")})
    return leaf(len(data))


middle(3)
"""
REGION_ROW = re.compile(r"^(0x[0-9a-f]+) +(0x[0-9a-f]+) +(0x[0-9a-f]+) +(\S+) *(.*)$", re.M)
SUMMARY_ROW = re.compile(r"^(\S+) +(\d+) +(0x[0-9a-f]+) +(0x[0-9a-f]+) +(0x[0-9a-f]+)$", re.M)


def _rows(text):
    return [match.groups() for match in REGION_ROW.finditer(text)]


@pytest.mark.parametrize("name", ["gdb13", "gdb18", "lldb23"])
def test_jit_regions_sums_up_a_long_perf_map_and_filters_it(name, tmp_path):
    """``info jit-regions`` on a -X perf run prints the regions per source, not 300 rows;
    --all, --source and ADDRESS ($pc of a trampoline frame, a number) give rows."""
    script = tmp_path / "short.py"
    script.write_text(PERF_SCRIPT)
    command = "info jit-regions" if name.startswith("gdb") else "jit-regions"
    select = "frame" if name.startswith("gdb") else "frame select"
    chosen = driver(name)
    core = tmp_path / chosen.core_name()
    live = chosen.launch([fixture_python("3.14"), "-X", "perf", script],
                         ["bt", command, f"{command} --all", f"{command} --source maps",
                          f"{command} --source perf-map", f"{command} --source nosuch"],
                         core=core)
    try:
        level = next(re.search(r"#(\d+)", line).group(1)
                     for line in live.output("bt").splitlines() if "py::middle:" in line)
        every = _rows(live.output(f"{command} --all"))
        middle = next(row for row in every if row[4].startswith("py::middle:"))
        from_core = chosen.open_core(
            [fixture_python("3.14")], core,
            [f"{select} {level}", f"{command} $pc", f"{command} {int(middle[0], 16) + 1:#x}",
             f"{command} 0x10", command])
    finally:
        live.remove_perf_files()
    summary = live.output(command)
    sources = {row[0]: int(row[1]) for row in SUMMARY_ROW.findall(summary)}
    perf = [row for row in every if row[3] == "perf-map"]
    assert len(perf) > 100 and sources == {"perf-map": len(perf), "maps": 1}, summary
    assert not _rows(summary), summary
    assert f'{len(every)} regions: "{command} --all" lists them, "{command} --source ' \
           f'SOURCE" those of one source, "{command} ADDRESS" those holding an address.' \
           in summary, summary
    assert [row[3] for row in _rows(live.output(f"{command} --source maps"))] == ["maps"]
    assert _rows(live.output(f"{command} --source perf-map")) == perf
    assert "--source takes one of maps, core, perf-map, jitdump, gdb-jit, no-cfi, " \
           "cpython-jit, not 'nosuch'." in live.whole, live.whole  # GDB's errors: stderr
    # The trampoline's frame: its pc is in its perf-map entry and in the mapping.
    for holding in (from_core.output(f"{command} $pc"),
                    from_core.output(f"{command} {int(middle[0], 16) + 1:#x}")):
        assert [(row[3], row[4]) for row in _rows(holding)] == \
            [("core", ""), ("perf-map", middle[4])], from_core.whole
    assert f"No JIT region holds 0x10. There are {len(every)} regions" \
           in from_core.output(f"{command} 0x10"), from_core.whole
    core_sources = {row[0] for row in SUMMARY_ROW.findall(from_core.output(command))}
    assert core_sources == {"perf-map", "core"}, from_core.whole


STOPS = """\
import os, signal


def leaf():
    os.kill(os.getpid(), signal.SIGTRAP)


leaf()
"""


def _cut(core: Path, dst: Path, at: int) -> Path:
    """A kernel-layout copy of ``core`` (notes first) cut at ``at`` bytes into the
    segment holding ``address``: that segment's rest and all later ones are lost."""
    from tests.e2e.test_corrupted_cores import notes_first
    layout = notes_first(core, dst)
    load = next(load for load in layout.loads if load.holds(at))
    with open(dst, "r+b") as handle:
        handle.truncate(load.offset + at - load.vaddr)
    return dst


@pytest.mark.parametrize("name", ["gdb13", "gdb18", "lldb23"])
def test_a_truncated_core_says_so_and_what_it_lost(name, tmp_path):
    """A core cut inside the stack (thread 1's stack lost), and one cut before
    _PyRuntime's segment: py-mixed-bt names the truncation and what is missing, not
    "the CPython runtime is not initialised yet" or "cannot read _PyRuntime"."""
    from tests.e2e.test_corrupted_cores import read_layout
    script = tmp_path / "stops.py"
    script.write_text(STOPS)
    python = fixture_python("3.14")
    whole = tmp_path / "whole.core"
    made = driver("gdb13").launch(
        [python, script], ["python print('runtime-at', int(gdb.parse_and_eval("
                           "'(long)&_PyRuntime')))"], core=whole)
    runtime = int(re.search(r"runtime-at (\d+)", made.whole).group(1))
    layout = read_layout(whole)
    in_stack = _cut(whole, tmp_path / "in-stack.core", layout.rsp + 16 * 8)
    no_runtime = _cut(whole, tmp_path / "no-runtime.core", runtime)
    chosen = driver(name)
    for core, lost in ((in_stack, "the stack of thread 1"), (no_runtime, "_PyRuntime in ")):
        size = core.stat().st_size
        needed = max(load.offset + load.filesz for load in read_layout(core).loads)
        shown = chosen.open_core([python], core, ["py-mixed-bt", MIXED_JSON_ALL])
        text = shown.output("py-mixed-bt")

        assert f"the core file {core} is truncated: it has {size} bytes, its program " \
               f"headers need {needed}; missing: " in text, shown.whole
        assert lost in text.split("missing: ")[1], shown.whole
        assert "not initialised yet" not in text, shown.whole
        assert shown.document(MIXED_JSON_ALL)["runtime_note"] in text, shown.whole
        # Said once on opening too (the sizes; the stacks are named by py-mixed-bt).
        assert shown.whole.count(f"warning: jit-unwind: the core file {core} is truncated: "
                                 f"it has {size} bytes, its program headers need {needed}; "
                                 "missing: ") == 1, shown.whole


def _open_without_executable(name: str, core: Path, commands) -> str:
    """``gdb -c CORE`` / ``target create --core CORE``: no executable given."""
    if name.startswith("gdb"):
        marked = []
        for command in commands:
            marked += [f"echo @@{command}\\n", command]
        return run_gdb(GDB_BINARIES[name], marked, before=[f"core-file {core}"])
    return run_lldb([f"target create --core {core}", WAIT_FOR_PROVIDER, *commands])


def _section(output: str, command: str, name: str) -> str:
    mark = f"@@{command}\n" if name.startswith("gdb") else f"(lldb) {command}\n"
    return output.split(mark, 1)[1].split("@@" if name.startswith("gdb") else "(lldb) ")[0]


def test_gdb13_on_a_core_without_its_executable_says_which_to_load(tmp_path):
    """Debian's GDB does not find the executable of ``gdb -c CORE``: its bt lists stack
    words as frames.  jit-unwind says (once) which executable the core names and how to
    load it, hangs no Python frame under those words, and py-mixed-bt prints the Python
    stack alone after that note; once loaded, the mixed stack is back."""
    script = tmp_path / "stops.py"
    script.write_text(STOPS)
    python = fixture_python("3.14")
    core = tmp_path / "python.core"
    driver("gdb13").launch([python, script], [], core=core)
    output = _open_without_executable("gdb13", core, [
        "bt", "py-mixed-bt", f"file {python}", "py-mixed-bt"])
    how = (f"the core names {python}: load it with `file {python}` (or start GDB as "
           f"`gdb {python} -c {core}`)")
    assert output.count(f"warning: jit-unwind: the core file {core} was opened without its "
                        f"executable: GDB cannot unwind its native frames, so no Python "
                        f"frame is placed among them; {how}.") == 1, output
    bt = _section(output, "bt", "gdb13")
    assert "[py]" not in bt and "#12 0x0000000000000000 in ?? ()" in bt, output
    without, with_it = output.split(f"@@file {python}\n")
    mixed = _section(without, "py-mixed-bt", "gdb13")
    assert mixed.splitlines()[0].startswith(f"note: the core file {core} was opened "), output
    assert how in mixed.splitlines()[0], output
    assert re.findall(r"^ *\[py\] (\S+)", mixed, re.M) == ["leaf", "<module>"], output
    assert not re.search(r"^#\d", mixed, re.M), output  # no stack word as a frame
    mixed = _section(with_it, "py-mixed-bt", "gdb13")
    assert "note:" not in mixed and re.search(r"^#\d+ +_PyEval_EvalFrameDefault", mixed,
                                              re.M), output
    assert re.findall(r"^ *\[py\] (\S+)", mixed, re.M) == ["leaf", "<module>"], output


@pytest.mark.parametrize("name", ["gdb13", "gdb18", "lldb23"])
def test_a_core_whose_executable_is_gone_says_so(name, tmp_path):
    """The executable the core names was moved away: every debugger opens the core
    without it.  jit-unwind names the missing path and how to give the executable;
    py-mixed-bt refuses with that message rather than print stack words."""
    script = tmp_path / "stops.py"
    script.write_text(STOPS)
    python = fixture_python("3.14")
    copy = tmp_path / "bin" / "python3.14"
    copy.parent.mkdir()
    shutil.copy2(python, copy)
    core = tmp_path / "python.core"
    driver("gdb13").launch([copy, script], [], env={"PYTHONHOME": str(python.parents[1])},
                           core=core)
    copy.rename(tmp_path / "elsewhere")
    output = _open_without_executable(name, core, ["bt", "py-mixed-bt"])
    how = ("`file PATH` (or start GDB as `gdb PATH -c " + f"{core}`)" if name.startswith("gdb")
           else f"`target create --core {core} PATH`")
    debugger = "GDB" if name.startswith("gdb") else "LLDB"
    text = (f"the core file {core} was opened without its executable: {debugger} cannot "
            f"unwind its native frames, so no Python frame is placed among them; the core "
            f"names {copy}, which is not there: give the executable with {how}")
    assert output.count(f"warning: jit-unwind: {text}.") == 1, output
    assert f"py-mixed-bt: {text}\n" in output, output
    assert "[py]" not in output, output


def test_gdb_wrapper_keeps_a_pythonhome_the_user_set_before_the_plugin():
    """``set environment PYTHONHOME=...`` before the plugin loads (an -iex, a line of
    .gdbinit above the plugin's): the program gets the user's value; only the wrapper's
    PYTHONPATH and PYTHONNOUSERSITE are kept out."""
    python = fixture_python("3.14")
    home = python.parents[1]
    output = _through_wrapper(
        [GDB_BINARIES["gdb18"], "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
         "-iex", f"set environment PYTHONHOME={home}", "-x", GDB_INIT, "-ex", "run",
         "--args", python, "-c", SEES_ITS_ENVIRONMENT], terminal=True)
    assert output.count("jit-unwind: programs run without PYTHONPATH, PYTHONNOUSERSITE: "
                        "GDB's pip wrapper set them for its own Python.") == 1, output
    assert f"program: ctypes imported, PYTHONPATH None PYTHONHOME {home}" in output, output
