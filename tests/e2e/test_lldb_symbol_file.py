"""JIT code named outside ``bt`` in LLDB: the symbol file jit-unwind adds as a module
(``SBTarget.AddModule`` at slide 0) names JIT frames in ``frame select`` and ``image
lookup -a``; with its .eh_frame LLDB's own unwinder goes through the toy JIT's code and
CPython's trampolines.  LLDB 23.1 (frame provider) and Debian's LLDB 19 (none); live
and from a core file."""

import re
from pathlib import Path

import pytest

from tests.e2e.test_lldb19 import run_lldb19
from tests.lldb_driver import WAIT_FOR_PROVIDER, frames_to_main, parse_lldb_backtrace
from tests.lldb_driver import run_lldb
from tests.driver import driver
from tests.jit_python import jit_python
from tests.python_expect import SCRIPTS, python_of
from tests.support import (PRINT_PID, REPO, fixture_binary, remove_launched,
                           remove_perf_map, run_gdb)

TOY = ["mixed", "1", "sigtrap", "--perf-map"]
# The toy's stack under LLDB (two libc frames above toy_stop): the frames the
# navigation below selects, checked against the bt of the same run.
JIT_FRAMES = {4: "toy::jit_fp", 7: "toy::jit_frameless", 8: "toy::enter_trampoline"}
NAVIGATE = ["bt", "frame select 4", "image lookup -a $pc", "frame select 8",
            "image lookup -a $pc", "image list"]


def _navigate_by_address(bt_output, levels=(4, 8)):
    """NAVIGATE with the frames' pcs instead of ``$pc``: in LLDB 23.1 ``$pc`` of a frame
    a provider made from a ``{"pc": ...}`` is another frame's (LLDB's addresses are the
    same in every run: it turns address space randomisation off)."""
    frames = parse_lldb_backtrace(bt_output)
    pcs = {level: re.search(r"frame #\d+: (0x[0-9a-f]+)", frames[level].line).group(1)
           for level in levels}
    commands = ["bt"]
    for level in levels:
        commands += [f"frame select {level}", f"image lookup -a {pcs[level]}"]
    return commands + ["image list"]
PERF_SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"
JIT_SCENARIOS = SCRIPTS / "jit_scenarios.py"


def _remove_perf_maps(*outputs):
    for output in outputs:  # each with its session's time (support.remove_process_files)
        remove_launched(output)


def _symbol_file(output):
    match = re.search(r"(/\S+/jit-\d+-\d+\.elf)", output)
    assert match, output
    return Path(match.group(1))


def _check_toy(output):
    frames = parse_lldb_backtrace(output.split("(lldb) frame select 4")[0])
    for level, name in JIT_FRAMES.items():
        assert frames[level].function == name, output
        assert re.search(rf"jit-\d+-\d+\.elf`{re.escape(name)} \+ \d+", frames[level].line), output
    assert "main" in [f.function for f in frames], output
    for level in (4, 8):
        assert re.search(rf"^frame #{level}: 0x[0-9a-f]+ jit-\d+-\d+\.elf`"
                         rf"{re.escape(JIT_FRAMES[level])} \+ \d+", output, re.M), output
        assert re.search(rf"Summary: jit-\d+-\d+\.elf`{re.escape(JIT_FRAMES[level])} \+ \d+",
                         output), output


def test_lldb23_names_toy_jit_frames_live_and_from_a_core(tmp_path):
    toyjit = fixture_binary("toyjit")
    first = run_lldb(["run", "bt"], [toyjit, *TOY])
    live = run_lldb(["run", *_navigate_by_address(first), "jit-regions"], [toyjit, *TOY])
    core = tmp_path / "toyjit.core"
    gdb_output = run_gdb(GDB_13, ["run", PRINT_PID, f"gcore {core}"], [toyjit, *TOY],
                         plugin=False)
    try:
        first_core = run_lldb([WAIT_FOR_PROVIDER, "jit-regions", "bt"], [toyjit], core=core)
        from_core = run_lldb([WAIT_FOR_PROVIDER, "jit-regions",
                              *_navigate_by_address(first_core)], [toyjit], core=core)
    finally:
        _remove_perf_maps(first)
        _remove_perf_maps(live)
        remove_perf_map(gdb_output)
    for output in (live, from_core):
        _check_toy(output)
        assert re.search(r"Symbol file /\S+\.elf: all 4 perf-map regions\.", output), output
        assert not _symbol_file(output).exists(), output  # removed when LLDB quits


def test_lldb23_own_core_names_jit_code_at_once(tmp_path):
    """LLDB 23 runs stop-hooks when it loads a core: the module is there for the first
    command (no jit-regions first).  A core LLDB saved while our module was loaded
    lists that (deleted) file; LLDB makes an empty module for it, which ours replaces:
    one module of ours, which names the JIT code."""
    from tests.driver import driver
    lldb23 = driver("lldb23")
    program = [fixture_binary("toyjit"), *TOY]
    core = tmp_path / lldb23.core_name()
    live = lldb23.launch(program, ["bt"], core=core)
    try:
        frames = parse_lldb_backtrace(live.output("bt"))
        pc = re.search(r"frame #\d+: (0x[0-9a-f]+)", frames[4].line).group(1)
        lookup = f"image lookup -a {pc}"
        opened = lldb23.open_core(program, core, [lookup, "image list"])
    finally:
        live.remove_perf_files()
    assert re.search(rf"Summary: jit-\d+-\d+\.elf`{re.escape(JIT_FRAMES[4])} \+ \d+$",
                     opened.output(lookup), re.M), opened.whole
    assert len(re.findall(r"jit-\d+-\d+\.elf", opened.output("image list"))) == 1, opened.whole


def test_lldb23_bt_with_the_symbol_file_lists_every_frame():
    """The provider's bt with the module loaded: the same frames to main as without it
    (LLDB 23.1 keeps ScriptedFrames inside the module)."""
    toyjit = fixture_binary("toyjit")
    for args in (["frameless", "50", "sigtrap", "--perf-map"], TOY):
        with_file = run_lldb(["run", "bt"], [toyjit, *args])
        without = run_lldb(["jit-unwind symbol-file off", "run", "bt"], [toyjit, *args])
        _remove_perf_maps(with_file, without)
        names = [f.function for f in parse_lldb_backtrace(with_file)]
        plain = [f.function for f in parse_lldb_backtrace(without)]
        assert ".elf`" in with_file and ".elf`" not in without
        assert names[:names.index("main") + 1] == plain[:plain.index("main") + 1], with_file


def test_lldb19_unwinds_and_names_jit_frames_with_the_symbol_file(tmp_path):
    """LLDB 19 has no frame provider: its own bt stopped at the first JIT frame; with
    the symbol file's names and unwind rules it reaches main.  LLDB's own frame lines
    (jit-unwind's frame-format off): the module's names."""
    output = run_lldb19(tmp_path, [fixture_binary("toyjit"), *TOY],
                        ["jit-unwind frame-format off", *NAVIGATE])
    _remove_perf_maps(output)
    _check_toy(output)
    assert not _symbol_file(output).exists(), output


def test_code_only_a_jitdump_names_is_in_the_module(tmp_path):
    """tests/fixtures/jitdump_jit.c: no perf map, not Python; its one function is named
    by its jitdump alone, whose unwind rules alone unwind it.  LLDB 23 (live, and a core)
    and LLDB 19 (its own frame lines and unwinder) name it from the module, in ``bt``
    and ``image lookup -a``."""
    program = [fixture_binary("jitdump_jit"), "2", "--dir", tmp_path]
    first = run_lldb(["process launch", "bt"], program)
    (pc,) = {match.group(1) for match in re.finditer(
        r"frame #\d+: (0x[0-9a-f]+) \S*jit::realigned", first)}
    live = run_lldb(["process launch", "bt", f"image lookup -a {pc}", "jit-regions"], program)
    core = tmp_path / "toy.core"
    run_gdb(GDB_13, ["run", f"gcore {core}"], program, plugin=False)
    from_core = run_lldb([WAIT_FOR_PROVIDER, "bt", f"image lookup -a {pc}", "jit-regions"],
                         program[:1], core=core)
    lldb19 = run_lldb19(tmp_path, program, ["jit-unwind frame-format off", "bt",
                                            f"image lookup -a {pc}"])
    in_module = re.compile(r"jit-\d+-\d+\.elf`jit::realigned \+ \d+")
    for output in (live, from_core, lldb19):
        # LLDB 23's provider, and LLDB 19's own unwinder with the writer's rules the
        # module's .eh_frame carries (the frame's CFA is in rbx): through all three
        # JIT frames to main.
        frames = [frame.line for frame in frames_to_main(output)
                  if "jit::realigned" in frame.line]
        assert len(frames) == 3 and all(in_module.search(line) for line in frames), output
        assert re.search(r"Summary: " + in_module.pattern, output), output
    for output in (live, from_core):
        assert re.search(r"Symbol file /\S+\.elf: all 1 jitdump regions\.", output), output


@pytest.mark.parametrize("lldb", ["lldb23", "lldb19"])
def test_a_breakpoint_on_a_jit_function_by_name_stops_there(lldb, tmp_path):
    """manyjit calls many::f0 after its first stop: a breakpoint set by the function's
    name (the module's symbol) hits it, and the stack below it is right.  LLDB 19 takes
    a name with "::" that is not a mangled one for C++ and looks for its last part
    alone, which finds nothing: there a regular expression names it."""
    program = [fixture_binary("manyjit"), "100", "--perf-map"]
    if lldb == "lldb23":
        output = run_lldb(["run", "breakpoint set -n many::f0", "continue", "bt 3"], program)
    else:
        output = run_lldb19(tmp_path, program, ["breakpoint set -r '^many::f0$'", "continue",
                                                "bt 3"])
    _remove_perf_maps(output)
    assert re.search(r"^Breakpoint 1: where = jit-\d+-\d+\.elf`many::f0, address = ",
                     output, re.M), output
    assert "stop reason = breakpoint 1.1" in output, output
    frames = parse_lldb_backtrace(output.split("(lldb) bt 3")[1])
    assert [frame.function for frame in frames[:2]] == ["many::f0", "main"], output


@pytest.mark.parametrize("lldb", ["lldb23", "lldb19"])
def test_a_breakpoint_on_a_cpython_jit_trace_by_name_stops_there(lldb):
    """CPython 3.14's JIT, jit_scenarios.py nested: key's hot loop is a trace entered
    at its start at every call of key, called again after the stop.  A breakpoint on
    that trace by the name bt shows (LLDB turns address randomisation off: the same in
    both runs) stops there."""
    program = [jit_python("3.14"), JIT_SCENARIOS, "nested"]
    env = {"PYTHON_JIT": "1"}
    first = driver(lldb).launch(program, ["bt"], env=env).whole
    found = re.search(r"(\[jit\] key \(\S+:\d+\) trace 0x[0-9a-f]+)", first)
    assert found, first
    name = found.group(1)
    by_name = (f"breakpoint set -n '{name}'" if lldb == "lldb23" else
               "breakpoint set -r '^" + re.escape(name).replace("\\ ", " ") + "$'")
    output = driver(lldb).launch(program, [by_name, "continue", "bt 1"], env=env).whole
    assert re.search(rf"^Breakpoint 1: where = jit-\d+-\d+\.elf`{re.escape(name)}, ",
                     output, re.M), output
    assert "stop reason = breakpoint 1.1" in output, output
    frames = parse_lldb_backtrace(output.split("(lldb) bt 1")[-1])
    assert frames and name in frames[0].line, output


@pytest.mark.parametrize("lldb", ["lldb23", "lldb19"])
def test_cpython_jit_trace_named_outside_bt(lldb, tmp_path):
    """CPython 3.14's JIT (raise_in_hot_loop.py): the trace that calls leaf is named by
    ``frame select``, ``image lookup -a`` and ``disassemble``, live and on the
    debugger's own core (LLDB 19 runs no stop-hook for a core: ``jit-regions`` loads
    the module there first, as docs/guide.md says)."""
    program = [jit_python("3.14"), SCRIPTS / "raise_in_hot_loop.py"]
    env = {"PYTHON_JIT": "1"}
    first = driver(lldb).launch(program, ["bt"], env=env)
    frames = parse_lldb_backtrace(first.whole)
    (frame,) = [f for f in frames if "[jit] hot (" in f.line]
    pc = re.search(r"frame #\d+: (0x[0-9a-f]+)", frame.line).group(1)
    navigate = [f"frame select {frame.level}", f"image lookup -a {pc}",
                f"disassemble -s {pc} -c 2"]
    core = tmp_path / driver(lldb).core_name()
    live = driver(lldb).launch(program, navigate, env=env, core=core)
    from_core = driver(lldb).open_core(program, core, [
        *(["jit-regions"] if lldb == "lldb19" else []), *navigate])
    trace = re.escape(f"[jit] hot ({program[1]}:") + r"\d+\) trace 0x[0-9a-f]+"
    for output in (live.whole, from_core.whole):
        assert re.search(rf"^frame #{frame.level}: {pc} \S*{trace}", output, re.M), output
        assert re.search(rf"Summary: jit-\d+-\d+\.elf`{trace} \+ \d+$", output, re.M), output
        assert re.search(rf"^jit-\d+-\d+\.elf`{trace}:\n(?:->)? +{int(pc, 16):#x} <\+\d+>:",
                         output, re.M), output


def test_perf_trampolines_named_in_lldb23(tmp_path):
    python = python_of("3.12.1")
    first = run_lldb(["run", "bt"], [python, "-X", "perf", PERF_SCRIPT])
    # The first trampoline's level ([py] frames are listed too)
    level = next(f.level for f in parse_lldb_backtrace(first) if ".elf`py::" in f.line)
    live = run_lldb(["run", *_navigate_by_address(first, (level,))],
                    [python, "-X", "perf", PERF_SCRIPT])
    _remove_perf_maps(first, live)
    name = f"py::recurse:{PERF_SCRIPT}"
    frames = parse_lldb_backtrace(live.split(f"(lldb) frame select {level}")[0])
    trampolines = [f for f in frames if ".elf`py::" in f.line]
    assert [f.line.split("`", 1)[1].split(" + ")[0] for f in trampolines] == (
        [name] * 4 + [f"py::<module>:{PERF_SCRIPT}"]), live
    assert frames[-1].function == "_start", live
    assert re.search(rf"^frame #{level}: 0x[0-9a-f]+ jit-\d+-\d+\.elf`{re.escape(name)} \+ \d+",
                     live, re.M), live
    assert re.search(rf"Summary: jit-\d+-\d+\.elf`{re.escape(name)} \+ \d+", live), live


def test_perf_trampolines_have_symbols_in_lldb19(tmp_path):
    """LLDB 19's own unwind stops in libpython below the first trampoline (as without
    jit-unwind), but the stop-hook loaded the symbol file: the trampolines have names."""
    name = f"py::recurse:{PERF_SCRIPT}"
    output = run_lldb19(tmp_path, [python_of("3.12.1"), "-X", "perf", PERF_SCRIPT],
                        ["image list", f"image lookup -s {name}"])
    _remove_perf_maps(output)
    loaded = output.split("(lldb) image list")[1].split("(lldb) image lookup")[0]
    assert re.search(r"/jit-unwind-\w+/jit-\d+-1\.elf", loaded), output
    assert re.search(rf"Summary: jit-\d+-1\.elf`{re.escape(name)}$", output, re.M), output
    assert not _symbol_file(output).exists(), output


GDB_13 = Path("/usr/bin/gdb")


def test_lldb23_setting_turns_the_module_on_and_off():
    """``jit-unwind symbol-file`` is on by default, listed with the other settings; off
    removes the module at once, on adds it again."""
    output = run_lldb(["process launch", "jit-unwind", "image list",
                       "jit-unwind symbol-file off", "image list", "image lookup -n toy::jit_fp",
                       "jit-unwind symbol-file on", "image list", "image lookup -n toy::jit_fp",
                       "jit-unwind"],
                      [fixture_binary("toyjit"), *TOY])
    _remove_perf_maps(output)
    parts = output.split("(lldb) jit-unwind symbol-file ")
    assert "symbol-file: on" in parts[0] and re.search(r"jit-\d+-\d+\.elf", parts[0]), output
    assert ".elf" not in parts[1] and "1 match found" not in parts[1], output
    assert re.search(r"jit-\d+-\d+\.elf", parts[2]), output
    assert "1 match found" in parts[2] and "toy::jit_fp" in parts[2], output
    assert parts[2].rstrip().endswith("symbol-file: on\njitdump: auto"), output


def _between(output, first, second):
    return output.split(f"(lldb) {first}")[1].split(f"(lldb) {second}")[0]


def test_lldb19_symbol_file_off_removes_the_module(tmp_path):
    """lldb-19 loads the symbol file by default; ``jit-unwind symbol-file off`` removes
    it: no module, and the JIT function's symbol is not found."""
    name = JIT_FRAMES[4]
    output = run_lldb19(tmp_path, [fixture_binary("toyjit"), *TOY],
                        ["image list", f"image lookup -s {name}", "jit-unwind symbol-file off",
                         "image list", f"image lookup -s {name}", "jit-unwind"])
    _remove_perf_maps(output)
    before = _between(output, "image list", "jit-unwind symbol-file off")
    after = output.split("(lldb) jit-unwind symbol-file off")[1].split("(lldb) jit-unwind\n")[0]
    assert re.search(rf"Summary: jit-\d+-\d+\.elf`{re.escape(name)}$", before, re.M), output
    assert ".elf" not in after and "Summary" not in after, output
    assert "symbol-file: off" in output.split("(lldb) jit-unwind\n")[-1], output


def test_lldb23_marks_of_jit_frames_named_by_the_symbol_file():
    """LLDB 23.1 shows a frame whose pc lies in the module by the module's symbol, not by
    the provider's name: the marks ([via …], [unwind stopped …]) follow each such frame
    as a pc-less frame, so a walk that ends in JIT code still says why."""
    toyjit = fixture_binary("toyjit")
    output = run_lldb(["jit-unwind show-method on", "run", "bt"], [toyjit, *TOY])
    _remove_perf_maps(output)
    frames = parse_lldb_backtrace(output)
    named = [i for i, f in enumerate(frames) if ".elf`toy::" in f.line]
    assert named, output
    for index in named:
        assert re.match(r"\[via [a-z-]+\]", frames[index + 1].function), output
