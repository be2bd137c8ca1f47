"""JIT code named everywhere in GDB, not only in ``bt``: the symbol file jit-unwind loads
(``set jit-unwind symbol-file``) names JIT frames after ``frame``/``up``/``down``, in
``info symbol``, ``x/i`` and ``break``; ``bt`` stays as it was; the file goes away with
GDB.  Toy JIT with a perf map, CPython ``-X perf`` trampolines, CPython's JIT; live and
from core files, GDB 13 and 18."""

import os
import re

import pytest

from tests.jit_python import JIT_MINORS, jit_python
from tests.python_expect import SCRIPTS, python_of
from tests.support import PRINT_PID, REPO, fixture_binary, remove_perf_map, run_gdb

SHOW_METHOD = "set jit-unwind show-method on"
OFF, ON = "set jit-unwind symbol-file off", "set jit-unwind symbol-file on"
INFO_SYMBOL = re.compile(r"^(.+?)(?: \+ \d+)? in section \.text\.jit\d+ of (/\S+\.elf)$", re.M)


def _section(output, name):
    """What GDB printed after ``echo @@name`` up to the next ``@@`` marker."""
    return output.split(f"@@{name}\n", 1)[1].split("@@", 1)[0]


def _marker(name):
    return f"echo @@{name}\\n"


def _frame_lines(text):
    return [line for line in text.splitlines() if line.startswith("#")]


def _symbol_files(output):
    return {match.group(2) for match in INFO_SYMBOL.finditer(output)}


def _assert_bt_unchanged(output):
    """``bt`` with the symbol file is ``bt`` without it, [via ...] marks included."""
    with_file, without = _frame_lines(_section(output, "on")), _frame_lines(_section(output, "off"))
    assert with_file and with_file == without, output


def _assert_gone(paths, output):
    assert paths, output
    for path in paths:
        assert not os.path.exists(path), path
        assert not os.path.exists(os.path.dirname(path)), path


def _frame_line(text, name):
    """The frame line GDB printed for a frame of function ``name`` (after frame/up)."""
    pattern = re.compile(rf"^#\d+\s+0x[0-9a-f]+ in {re.escape(name)} \(\)$", re.M)
    return pattern.search(text)


# --- the toy JIT ------------------------------------------------------------------

NAVIGATE_TOY = [_marker("navigate"), "frame function jit_callback", "up",
                "info symbol $pc", "x/3i $pc", "up 3", "up", "info symbol $pc"]


def _check_toy_navigation(text):
    # #5 toy::jit_fp, then (up 3) #8 toy::jit_frameless, (up) #9 toy::enter_trampoline
    for name in ("toy::jit_fp", "toy::jit_frameless", "toy::enter_trampoline"):
        assert _frame_line(text, name), text
    names = [match.group(1) for match in INFO_SYMBOL.finditer(text)]
    assert names == ["toy::jit_fp", "toy::enter_trampoline"], text
    assert re.search(r"^=> 0x[0-9a-f]+ <toy::jit_fp\+\d+>:", text, re.M), text


def test_toy_jit_functions_are_named_everywhere(gdb, tmp_path):
    toyjit = fixture_binary("toyjit")
    core = tmp_path / "toyjit.core"
    live = run_gdb(gdb, ["run", PRINT_PID, SHOW_METHOD, OFF, _marker("off"), "bt", ON,
                         _marker("on"), "bt", *NAVIGATE_TOY, _marker("regions"),
                         "info jit-regions", f"gcore {core}", _marker("end")],
                   [toyjit, "mixed", "1", "sigtrap", "--perf-map"])
    try:
        from_core = run_gdb(gdb, [SHOW_METHOD, OFF, _marker("off"), "bt", ON,
                                  _marker("on"), "bt", *NAVIGATE_TOY], [toyjit], core=core)
        # A batch script that loads the core itself: no prompt comes before the next
        # command, which finds the file loaded all the same.
        later = run_gdb(gdb, [f"file {toyjit}", f"core-file {core}", *NAVIGATE_TOY])
    finally:
        remove_perf_map(live)
    for output in (live, from_core):
        _assert_bt_unchanged(output)
        assert "[via prologue]" in _section(output, "on"), output  # still our unwinder
        _check_toy_navigation(_section(output, "navigate"))
        _assert_gone(_symbol_files(output), output)
    _check_toy_navigation(_section(later, "navigate"))
    _assert_gone(_symbol_files(later), later)
    (path,) = _symbol_files(live)
    assert f"Symbol file {path}: all 4 perf-map regions." in _section(live, "regions"), live


def test_setting_off_unloads_and_on_loads_again(gdb):
    toyjit = fixture_binary("toyjit")
    output = run_gdb(gdb, ["run", PRINT_PID, "show jit-unwind symbol-file", OFF,
                           "show jit-unwind symbol-file", _marker("off"),
                           "frame function jit_callback", "up", ON, _marker("on"),
                           "frame function jit_callback", "up"],
                     [toyjit, "fp", "1", "sigtrap", "--perf-map"])
    remove_perf_map(output)
    assert "Loading a symbol file for JIT code is on." in output, output
    assert "Loading a symbol file for JIT code is off." in output, output
    assert _frame_line(_section(output, "off"), "??"), output
    assert _frame_line(_section(output, "on"), "toy::jit_fp"), output


def test_help_of_the_setting(gdb):
    output = run_gdb(gdb, ["help set jit-unwind symbol-file"])
    assert "add-symbol-file FILE -o 0" in output, output


def test_break_on_a_jit_function_stops_there(gdb):
    """manyjit calls many::f0 after its first stop: a breakpoint set by name hits it."""
    output = run_gdb(gdb, ["run", PRINT_PID, "break *'many::f0'", "continue",
                           _marker("stop"), "bt", "info symbol $pc"],
                     [fixture_binary("manyjit"), "100", "--perf-map"])
    remove_perf_map(output)
    assert re.search(r"^Breakpoint 1, 0x[0-9a-f]+ in many::f0 \(\)$", output, re.M), output
    frames = _frame_lines(_section(output, "stop"))
    assert re.match(r"#0\s+0x[0-9a-f]+ in many::f0 \(\)", frames[0]), output
    assert re.match(r"#1\s+0x[0-9a-f]+ in main ", frames[1]), output  # unwound right
    assert re.search(r"^many::f0 in section \.text\.jit0 of ", output, re.M), output
    _assert_gone(_symbol_files(output), output)


def test_code_named_only_by_a_jitdump_is_named_everywhere(gdb, tmp_path):
    """tests/fixtures/jitdump_jit.c: no perf map, not Python; its one function is named
    by its jitdump alone (the dump in a directory that only the process's mapping of
    it names).  After ``frame``/``up``, in ``info symbol`` and ``x/i``, live and core."""
    program = fixture_binary("jitdump_jit")
    core = tmp_path / "toy.core"
    navigate = [_marker("navigate"), "frame function descend", "up", "info symbol $pc",
                "x/2i $pc", _marker("regions"), "info jit-regions"]
    live = run_gdb(gdb, ["run", *navigate, f"gcore {core}", _marker("end")],
                   [program, "2", "--dir", tmp_path])
    from_core = run_gdb(gdb, [*navigate, _marker("end")], [program], core=core)
    for output in (live, from_core):
        text = _section(output, "navigate")
        assert _frame_line(text, "jit::realigned"), output
        assert [m.group(1) for m in INFO_SYMBOL.finditer(text)] == ["jit::realigned"], output
        assert re.search(r"^=> 0x[0-9a-f]+ <jit::realigned\+\d+>:", text, re.M), output
        assert re.search(r"^Symbol file \S+: all 1 jitdump regions\.$",
                         _section(output, "regions"), re.M), output
        _assert_gone(_symbol_files(output), output)


# --- CPython -X perf ------------------------------------------------------------------

PERF_SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"
NAVIGATE_PERF = [_marker("navigate"), "frame function py_trampoline_evaluator", "down",
                 "info symbol $pc", "x/3i $pc", "info frame", "disassemble",
                 _marker("unfiltered"), "bt -no-filters"]


def _check_perf_navigation(output):
    """The perf map's names exactly as written, wherever GDB prints a symbol: GDB's Ada
    decoder once read "recurse_sigtrap.py" as "recurse_sigtrap[py]" in frame lines,
    info frame and info symbol."""
    text = _section(output, "navigate")
    name = f"py::recurse:{PERF_SCRIPT}"
    assert not re.search(r"\w\[py\]", text), text  # not the "    [py] f ()" lines
    assert _frame_line(text, name), text
    assert re.search(rf"^{re.escape(name)} \+ \d+ in section \.text\.jit\d+ of ", text,
                     re.M), text
    assert re.search(rf"^=> 0x[0-9a-f]+ <{re.escape(name)}\+\d+>:", text, re.M), text
    assert re.search(rf"^ rip = 0x[0-9a-f]+ in {re.escape(name)}; saved rip = ", text,
                     re.M), text
    assert f"Dump of assembler code for function {name}:\n" in text, text
    unfiltered = [re.sub(r"^#\d+\s+0x[0-9a-f]+ in ", "", line)
                  for line in _frame_lines(_section(output, "unfiltered")) if " in py::" in line]
    assert unfiltered == [f"{name} ()"] * 4 + [f"py::<module>:{PERF_SCRIPT} ()"], output


def test_cpython_perf_trampolines_are_named_everywhere(gdb, tmp_path):
    python = python_of("3.12.1")
    core = tmp_path / "python.core"
    live = run_gdb(gdb, ["run", PRINT_PID, SHOW_METHOD, OFF, _marker("off"), "bt", ON,
                         _marker("on"), "bt", *NAVIGATE_PERF, f"gcore {core}",
                         _marker("end")],
                   [python, "-X", "perf", PERF_SCRIPT])
    try:
        from_core = run_gdb(gdb, [SHOW_METHOD, OFF, _marker("off"), "bt", ON,
                                  _marker("on"), "bt", *NAVIGATE_PERF], [python], core=core)
    finally:
        remove_perf_map(live)
    for output in (live, from_core):
        _assert_bt_unchanged(output)
        _check_perf_navigation(output)
        _assert_gone(_symbol_files(output), output)


RAISE_SCRIPT = SCRIPTS / "raise_in_hot_loop.py"


def test_break_on_a_perf_trampoline_by_name_stops_there(gdb):
    """raise_in_hot_loop.py stops at its 200,000th call of leaf and calls it 100,000
    times more: a breakpoint on leaf's trampoline, by the name bt shows, hits it."""
    output = run_gdb(gdb, ["run", PRINT_PID, f"break *'py::leaf:{RAISE_SCRIPT}'", "continue",
                           _marker("stop"), "info symbol $pc", "kill"],
                     [python_of("3.12.1"), "-X", "perf", RAISE_SCRIPT])
    remove_perf_map(output)
    leaf = re.escape(f"py::leaf:{RAISE_SCRIPT}")
    assert re.search(rf"^Breakpoint 1, 0x[0-9a-f]+ in {leaf} \(\)$", output, re.M), output
    assert re.search(rf"^{leaf} in section \.text\.jit\d+ of ", _section(output, "stop"),
                     re.M), output


# --- CPython's JIT ----------------------------------------------------------------------

JIT_SCRIPT = SCRIPTS / "jit_scenarios.py"
NAVIGATE_JIT = [_marker("navigate"), "frame function _PyEval_EvalFrameDefault", "down",
                "info symbol $pc", "down", "info symbol $pc", "x/3i $pc"]


def _check_jit_navigation(text):
    shim = f"[jit shim] hot ({JIT_SCRIPT}:"
    trace = f"[jit] hot ({JIT_SCRIPT}:"
    assert re.search(rf"^#\d+\s+0x[0-9a-f]+ in {re.escape(shim)}\d+\) \(\)$", text, re.M), text
    assert re.search(rf"^#\d+\s+0x[0-9a-f]+ in {re.escape(trace)}\d+\) trace 0x[0-9a-f]+ \(\)$",
                     text, re.M), text
    names = [match.group(1) for match in INFO_SYMBOL.finditer(text)]
    assert len(names) == 2 and names[0].startswith(shim) and names[1].startswith(trace), text
    assert re.search(rf"^=> 0x[0-9a-f]+ <{re.escape(trace)}\d+\) trace 0x[0-9a-f]+\+\d+>:",
                     text, re.M), text


@pytest.mark.parametrize("minor", JIT_MINORS)
def test_cpython_jit_executors_are_named_everywhere(gdb, tmp_path, minor):
    python = jit_python(minor)
    core = tmp_path / "jit.core"
    live = run_gdb(gdb, ["set environment PYTHON_JIT=1", "run", SHOW_METHOD, OFF,
                         _marker("off"), "bt", ON, _marker("on"), "bt", *NAVIGATE_JIT,
                         f"gcore {core}", _marker("end")],
                   [python, JIT_SCRIPT, "kill"])
    from_core = run_gdb(gdb, [SHOW_METHOD, OFF, _marker("off"), "bt", ON, _marker("on"), "bt",
                              *NAVIGATE_JIT], [python], core=core)
    for output in (live, from_core):
        _assert_bt_unchanged(output)
        _check_jit_navigation(_section(output, "navigate"))
        _assert_gone(_symbol_files(output), output)


@pytest.mark.parametrize("minor", JIT_MINORS)
def test_break_on_a_jit_trace_by_name_stops_there(gdb, minor):
    """jit_scenarios.py nested: key's hot loop is a JIT trace, entered at its start at
    every call of key; key is called again after the stop.  A breakpoint on that trace,
    by the name bt shows (GDB turns address randomisation off: the same in both runs),
    stops there, with key's Python frame under it."""
    python = jit_python(minor)
    first = run_gdb(gdb, ["set environment PYTHON_JIT=1", "run", "bt"],
                    [python, JIT_SCRIPT, "nested"])
    trace = re.search(r" in (\[jit\] key \(\S+:\d+\) trace 0x[0-9a-f]+) \(\)$", first, re.M)
    assert trace, first
    name = trace.group(1)
    output = run_gdb(gdb, ["set environment PYTHON_JIT=1", "run", f"break *'{name}'",
                           "continue", _marker("stop"), "bt 1", "info symbol $pc", "kill"],
                     [python, JIT_SCRIPT, "nested"])
    assert re.search(rf"^Breakpoint 1, 0x[0-9a-f]+ in {re.escape(name)} \(\)$", output,
                     re.M), output
    text = _section(output, "stop")
    assert re.search(r"^\s+\[py\] key \(\) at \S+jit_scenarios\.py:\d+$", text, re.M), output
    assert f"{name} in section .text.jit" in text, output
