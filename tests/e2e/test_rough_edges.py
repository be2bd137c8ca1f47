"""Issue 19's rough edges, as a user meets them in GDB and LLDB."""

import json
import re
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from tests.driver import driver
from tests.jit_python import fixture_python
from tests.lldb_driver import LLDB_INIT, run_lldb
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


def _through_wrapper(argv, **variables):
    """Run a debugger (a pip wrapper: .venv/bin/gdb or lldb) as a user does, in the
    environment the tests run in minus what a wrapper may have left in it, plus
    ``variables``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHONHOME", "PYTHONPATH", "PYTHONNOUSERSITE",
                                "PYTHONLOADER", "LLDB_DEBUGSERVER"))}
    env.update(variables)
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                            errors="replace", timeout=GDB_TIMEOUT, stdin=subprocess.DEVNULL,
                            env=env)
    return result.stdout + result.stderr


def _assert_program_runs_with_its_own_environment(output, line, plugin):
    runs = [text for text in output.splitlines() if text.startswith("program:")]
    if not plugin:  # the wrapper's PYTHONHOME breaks CPython 3.14: what the plugin fixes
        assert not runs, output
        return
    assert output.count(line) == 1, output
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
        _through_wrapper(argv), WRAPPER_LINE.format("", "GDB"), plugin)


@pytest.mark.parametrize("plugin", [True, False])
def test_lldb_wrapper_environment_stays_out_of_the_program(plugin):
    argv = [REPO / ".venv" / "bin" / "lldb", "--no-lldbinit", "-b"]
    if plugin:
        argv += ["-o", f"command script import {LLDB_INIT}"]
    argv += ["-o", "run", "-o", "settings set target.env-vars PYTHONPATH=/users/own",
             "-o", "run", "--", fixture_python("3.14"), "-c", SEES_ITS_ENVIRONMENT]
    _assert_program_runs_with_its_own_environment(
        _through_wrapper(argv), WRAPPER_LINE.format(", PYTHONLOADER_LIBPYTHON", "LLDB"),
        plugin)


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

