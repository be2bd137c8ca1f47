"""Code without call frame information inside mapped files (tests/fixtures/nocfi.c):
hand-written assembly that keeps and that omits a frame pointer, and C built without
unwind tables, called from C and calling back into C.  ``bt`` is exact to ``main`` on
GDB 13 and 18 (live and core), each frame named by its symbol and, under show-method,
marked ``[via prologue]``; LLDB 23 and 19 unwind such code themselves (they emulate
the instructions of functions whose symbol bounds they know) and stay right with the
plugin loaded.  A program without such frames keeps GDB's own backtrace."""

import pytest

from tests.lldb_driver import WAIT_FOR_PROVIDER, run_lldb
from tests.lldb_driver import frames_to_main as lldb_frames_to_main
from tests.support import GDB_BINARIES, fixture_binary, parse_backtrace, run_gdb

SHOW_METHOD = "set jit-unwind show-method on"
NOCFI_FUNCTIONS = {"fp": "asm_fp_function", "frameless": "asm_frameless_function",
                   "c": "c_frameless_function"}
MIXED_CYCLE = ("fp", "frameless", "c")  # nocfi.c's mixed mode, by depth % 3


JIT = "[jit"  # the --via-jit stub's frame: "[jit 0xSTART+0xOFFSET]"


def expected_frames(mode: str, depth: int, via_jit: bool = False):
    """Function names from nocfi_stop outwards to main."""
    names = ["nocfi_stop"]
    for level in range(depth + 1):
        kind = MIXED_CYCLE[level % 3] if mode == "mixed" else mode
        names += ["nocfi_callback"] + ([JIT] if via_jit else []) + [
            NOCFI_FUNCTIONS[kind], "call_nocfi"]
    return names + ["main"]


def _name(function: str) -> str:
    return JIT if function.startswith(JIT) else function.split(" [")[0]


def check_gdb_backtrace(output: str, mode: str, depth: int, show_method: bool = True,
                        via_jit: bool = False):
    frames = parse_backtrace(output)
    names = [_name(f.function) for f in frames]
    assert "nocfi_stop" in names, output
    actual = frames[names.index("nocfi_stop"):]
    listing = "\n".join(f.line for f in frames)
    assert [_name(f.function) for f in actual] == expected_frames(mode, depth, via_jit), \
        listing
    for frame in actual:
        name = _name(frame.function)
        if name in NOCFI_FUNCTIONS.values() and show_method:
            assert frame.function == f"{name} [via prologue]", frame.line
        elif name == JIT and show_method:
            assert frame.function.endswith("] [via prologue-search]"), frame.line
        else:
            assert "[via" not in frame.function, frame.line
        assert "guess" not in frame.line and "unwind stopped" not in frame.line, frame.line
    assert "Backtrace stopped" not in output, output


def program(mode: str, depth: int, stop: str = "sigtrap", via_jit: bool = False):
    return [fixture_binary("nocfi"), mode, str(depth), stop] + (
        ["--via-jit"] if via_jit else [])


@pytest.mark.parametrize("via_jit", [False, True], ids=["direct", "via-jit"])
@pytest.mark.parametrize("mode", ["fp", "frameless", "c", "mixed"])
def test_gdb_backtrace_through_code_without_cfi(gdb, tmp_path, mode, via_jit):
    """With --via-jit the code without CFI calls back through a frameless JIT stub:
    JIT frames and frames without CFI alternate."""
    core = tmp_path / "nocfi.core"
    live = run_gdb(gdb, [SHOW_METHOD, "run", "bt", f"gcore {core}"],
                   program(mode, 5, via_jit=via_jit))
    check_gdb_backtrace(live, mode, 5, via_jit=via_jit)
    assert core.exists(), live
    from_core = run_gdb(gdb, [SHOW_METHOD, "bt"], [fixture_binary("nocfi")], core=core)
    check_gdb_backtrace(from_core, mode, 5, via_jit=via_jit)


def test_gdb_stopped_at_a_breakpoint_without_show_method(gdb):
    output = run_gdb(gdb, ["break nocfi_stop", "run", "bt"], program("mixed", 2, "breakpoint"))
    check_gdb_backtrace(output, "mixed", 2, show_method=False)
    assert parse_backtrace(output)[0].function == "nocfi_stop", output


def test_gdb_13_alone_invents_frames_there():
    """Why the plugin unwinds this code: GDB 13's prologue analyzer loses the walk in
    code that keeps no frame pointer (the fixture still shows what it is meant to)."""
    output = run_gdb(GDB_BINARIES["gdb13"], ["run", "bt"], program("frameless", 2),
                     plugin=False)
    names = [f.function for f in parse_backtrace(output)]
    assert "asm_frameless_function" in names, output
    assert names[-1] != "main", output


@pytest.mark.parametrize("show_method", [False, True], ids=["plain", "show-method"])
@pytest.mark.parametrize("case", ["deepstack", "nocfi-before", "toyjit-before"])
def test_gdb_backtrace_without_such_frames_is_gdbs_own(gdb, case, show_method):
    """No frame is reclassified: a program's bt with the plugin is GDB's bt, line for
    line, also with show-method on (which enables the frame filter everywhere)."""
    if case == "deepstack":
        commands, argv = ["run", "bt"], [fixture_binary("deepstack"), "30"]  # SIGTRAP in libc
    elif case == "nocfi-before":
        commands, argv = ["break call_nocfi", "run", "bt"], program("mixed", 2, "breakpoint")
    else:
        commands = ["break call_jit", "run", "bt"]
        argv = [fixture_binary("toyjit"), "fp", "0", "breakpoint"]
    before = [SHOW_METHOD] if show_method else []
    with_plugin = run_gdb(gdb, before + commands, argv)
    without = run_gdb(gdb, commands, argv, plugin=False)
    lines = lambda text: [line for line in text.splitlines() if line.startswith("#")]
    assert lines(with_plugin) == lines(without) != [], with_plugin


@pytest.mark.parametrize("via_jit", [False, True], ids=["direct", "via-jit"])
@pytest.mark.parametrize("mode", ["fp", "frameless", "c", "mixed"])
def test_lldb_backtrace_through_code_without_cfi(tmp_path, mode, via_jit):
    """LLDB unwinds code without CFI itself; through JIT code (--via-jit) LLDB gives up
    on its callers and the walk unwinds them with the core's prologue decoding."""
    core = tmp_path / "nocfi.dmp"
    live = run_lldb(["process launch", "bt", f"process save-core --style full {core}"],
                    program(mode, 5, via_jit=via_jit))
    assert core.exists(), live
    from_core = run_lldb([WAIT_FOR_PROVIDER, "bt"], [fixture_binary("nocfi")], core=core)
    for output in (live, from_core):
        frames = lldb_frames_to_main(output)
        names = [_name(f.function) for f in frames]
        assert names[names.index("nocfi_stop"):] == expected_frames(mode, 5, via_jit), output
        assert not any("unwind stopped" in f.line or "guess" in f.line
                       for f in frames), output
        if not via_jit:  # LLDB's own frames, none of ours
            assert not any("[synthetic]" in f.line for f in frames), output


def test_lldb19_backtrace_through_code_without_cfi(tmp_path):
    """lldb-19 (no frame providers) with the plugin loaded: its own bt, exact to main."""
    from tests.e2e.test_lldb19 import run_lldb19
    output = run_lldb19(tmp_path, program("mixed", 5), ["bt"])
    frames = lldb_frames_to_main(output)
    names = [f.function for f in frames]
    assert names[names.index("nocfi_stop"):] == expected_frames("mixed", 5), output
