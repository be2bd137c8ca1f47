"""The toy JIT with ``--gdb-jit`` under real GDB 13 and 18: its frame-pointer functions are
also registered through GDB's JIT interface, as CPython 3.15 registers its executors (one
in-memory ELF; every function named ``toy::jit_entry:<jit>``; an .eh_frame giving the
frame-pointer rule).  The frameless code and its trampoline are not registered.

GDB unwinds registered code with its .eh_frame, so the plugin's unwinder must leave it
alone; names from a perf map (one per function) still win over the one registered name.

On a gcore core file, GDB 13 and GDB 18 alike read ``__jit_debug_descriptor`` from the
core's memory and load every registered object file again (``maint info jit`` lists the
entry, ``bt`` without the plugin names and unwinds the registered frames), so a core
behaves like the live process.

Every test runs on two builds of tests/fixtures/toyjit.c: the Makefile's (the descriptor
is found in its debug info) and one with ``-rdynamic`` (found among exported symbols, as
CPython exports ``__jit_debug_descriptor``: ``Py_EXPORTED_SYMBOL``, ``-export-dynamic``).
"""

import re
import subprocess

import pytest

from tests.support import (PRINT_PID, REPO, assert_no_unnamed_frames, fixture_binary,
                           parse_backtrace, remove_perf_map, run_gdb)
from tests.toyjit_expect import GDB_JIT_NAME, PERF_NAMES, check_backtrace

SHOW_METHOD = "set jit-unwind show-method on"
# The Makefile's flags for the fixtures, plus -rdynamic (see the module docstring).
CFLAGS = ["-O0", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-rdynamic"]
_ROW = re.compile(r"^(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+(\S+)\s*(.*)$")


@pytest.fixture(scope="module", params=["debug-info", "exported"])
def toyjit(request, tmp_path_factory):
    if request.param == "debug-info":
        return fixture_binary("toyjit")
    binary = tmp_path_factory.mktemp("toyjit_gdb_jit") / "toyjit"
    subprocess.run(["gcc", *CFLAGS, "-o", str(binary),
                    str(REPO / "tests" / "fixtures" / "toyjit.c")], check=True)
    return binary


def live_then_core(gdb, tmp_path, program, commands, plugin=True):
    """Run ``program`` to its SIGTRAP, run ``commands``, write a core; run ``commands`` on
    that core.  Returns (live output, core output)."""
    core = tmp_path / "toyjit.core"
    live = run_gdb(gdb, ["run", PRINT_PID, *commands, f"gcore {core}"], program,
                   plugin=plugin)
    try:
        assert core.exists(), live
        from_core = run_gdb(gdb, list(commands), [program[0]], core=core, plugin=plugin)
    finally:
        remove_perf_map(live)
    return live, from_core


def frame_lines(output):
    return [line for line in output.splitlines() if line.startswith("#")]


def region_rows(output):
    """(start, end, source, name) of each ``info jit-regions`` row."""
    rows = []
    for line in output.splitlines():
        match = _ROW.match(line)
        if match:
            rows.append((int(match.group(1), 16), int(match.group(2), 16), match.group(3),
                         match.group(4).strip()))
    return rows


@pytest.mark.parametrize("perf_map", [False, True], ids=["no-perf-map", "perf-map"])
@pytest.mark.parametrize("depth", [0, 1, 50])
@pytest.mark.parametrize("mode", ["fp", "mixed"])
def test_registered_frames_are_unwound_by_gdb_and_named_by_the_perf_map(
        gdb, toyjit, tmp_path, mode, depth, perf_map):
    """Exactly the true frames down to main, live and from a core.  Registered (fp)
    frames carry no "[via ...]": GDB unwound them.  Their name is the perf map's own name
    for each function when there is one, else GDB's ``toy::jit_entry:<jit>``; the
    frameless levels are still unwound by the plugin."""
    args = [mode, str(depth), "sigtrap", "--gdb-jit"] + (["--perf-map"] if perf_map else [])
    live, from_core = live_then_core(gdb, tmp_path, [toyjit, *args], [SHOW_METHOD, "bt"])
    for output in (live, from_core):
        frames = parse_backtrace(output)
        assert_no_unnamed_frames(frames)
        check_backtrace(frames, mode, depth, perf_map, gdb_jit=True)
        if perf_map:
            assert GDB_JIT_NAME not in output, output


def test_gdb_alone_loads_registered_code_from_a_core(gdb, toyjit, tmp_path):
    """Without the plugin, GDB names and unwinds the registered frames, live and from a
    core: it reads the JIT descriptor and the object file from the core's memory."""
    live, from_core = live_then_core(gdb, tmp_path, [toyjit, "fp", "2", "sigtrap", "--gdb-jit"],
                                     ["bt", "maint info jit"], plugin=False)
    for output in (live, from_core):
        frames = parse_backtrace(output)
        names = [f.function for f in frames]
        assert names.count(GDB_JIT_NAME) == 3, output
        assert names[-1] == "main", output
        entries = re.findall(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+\d+\s*$", output, re.MULTILINE)
        assert len(entries) == 1, output


def test_no_worse_than_gdb_on_registered_code(gdb, toyjit, tmp_path):
    """With every JIT frame registered and no perf map, bt with the plugin is GDB's own."""
    program = [toyjit, "fp", "3", "sigtrap", "--gdb-jit"]
    with_plugin = live_then_core(gdb, tmp_path, program, ["bt"])
    without = live_then_core(gdb, tmp_path, program, ["bt"], plugin=False)
    for plugin_output, gdb_output in zip(with_plugin, without):
        assert frame_lines(plugin_output) == frame_lines(gdb_output) != [], plugin_output
        assert GDB_JIT_NAME in plugin_output


def test_info_jit_regions_lists_the_registered_functions(gdb, toyjit, tmp_path):
    """One gdb-jit row per registered function, at the addresses and sizes the perf map
    gives them; the frameless code and the trampoline are not registered."""
    args = ["mixed", "1", "sigtrap", "--gdb-jit", "--perf-map"]
    live, from_core = live_then_core(gdb, tmp_path, [toyjit, *args], ["info jit-regions"])
    for output in (live, from_core):
        rows = region_rows(output)
        registered = sorted((start, end) for start, end, source, name in rows
                            if source == "gdb-jit")
        assert all(name == GDB_JIT_NAME for _, _, source, name in rows
                   if source == "gdb-jit"), output
        perf = {name: (start, end) for start, end, source, name in rows
                if source == "perf-map"}
        assert registered == sorted([perf[PERF_NAMES["fp"]], perf[PERF_NAMES["fp-corrupt"]]]), \
            output
