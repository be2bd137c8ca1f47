"""The toy JIT under real LLDB 23 (lldb-for-pwndbg): the frame provider's ``bt`` from
GDB's gcore, with a perf map, without JIT code in a minidump, on several targets; the
settings and the jit-regions command.  Every mode at depths 0/1/500, live and from
LLDB's own minidump, is in tests/e2e/test_scenarios.py."""

import re
from pathlib import Path

import pytest

from tests.lldb_driver import frames_to_main as lldb_frames_to_main
from tests.lldb_driver import (LLDB_INIT, SELECT_EVERY_FRAME, WAIT_FOR_PROVIDER,
                               parse_lldb_backtrace, run_lldb)
from tests.support import GDB_BINARIES, fixture_binary, run_gdb
from tests.toyjit_expect import check_backtrace

def frames_to_main(output):
    """The frames of the last bt up to main, none of them ending a walk early."""
    frames = lldb_frames_to_main(output)
    assert not any("unwind stopped" in f.line for f in frames), output
    return frames


def check_lldb_backtrace(output, mode, depth, perf_map):
    frames = frames_to_main(output)
    check_backtrace(frames, mode, depth, perf_map, show_method=False)
    # Every JIT frame is one of ours: named, and listed as synthetic by LLDB.
    for frame in frames:
        if frame.function.startswith("["):
            assert "[synthetic]" in frame.line, frame.line


def check_every_frame_selected(output):
    count = int(re.search(r"selecting (\d+) frames", output).group(1))
    assert count > 3, output
    selected = re.findall(r"^frame #(\d+): ", output, re.M)
    assert [int(n) for n in selected] == list(range(count)), output
    # The JIT frames' disassembly shows when selected.
    assert re.search(r"^frame #\d+: 0x[0-9a-f]+ \[", output, re.M), output


def program(mode, depth, perf_map=False):
    return [fixture_binary("toyjit"), mode, str(depth), "sigtrap"] + (
        ["--perf-map"] if perf_map else [])


def remove_perf_map(output):
    for pid in set(re.findall(r"Process (\d+) launched", output)):
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)


@pytest.mark.parametrize("mode", ["fp", "frameless", "mixed"])
def test_gdb_gcore_core_file(tmp_path, mode):
    core = tmp_path / "toyjit.core"
    run_gdb(GDB_BINARIES["gdb13"], ["run", f"gcore {core}"], program(mode, 3), plugin=False)
    assert core.exists()
    output = run_lldb([WAIT_FOR_PROVIDER, "bt", SELECT_EVERY_FRAME, "jit-regions"],
                      [fixture_binary("toyjit")], core=core)
    check_lldb_backtrace(output, mode, 3, perf_map=False)
    check_every_frame_selected(output)
    assert re.search(r"^0x[0-9a-f]+ +0x[0-9a-f]+ +0x2000 +core", output, re.M), output


@pytest.mark.parametrize("mode", ["fp", "frameless", "mixed"])
def test_perf_map_names(mode):
    live = run_lldb(["process launch", "bt", "jit-regions"], program(mode, 2, perf_map=True))
    try:
        check_lldb_backtrace(live, mode, 2, perf_map=True)
        assert "toy::enter_trampoline" in live.split("(lldb) jit-regions")[1], live
        assert "perf-map" in live, live
    finally:
        remove_perf_map(live)


def test_minidump_without_jit_code_says_why(tmp_path):
    """LLDB's default minidump leaves the JIT code out: the JIT frame says so and what is
    found after it is marked as a guess.  The scan-found caller gets the rbp the JIT
    entry pushed below its return address, so the walk goes on to main."""
    core = tmp_path / "toyjit.dmp"
    run_lldb(["process launch", f"process save-core {core}"], program("frameless", 1))
    output = run_lldb([WAIT_FOR_PROVIDER, "bt"], [fixture_binary("toyjit")], core=core)
    frames = parse_lldb_backtrace(output)
    names = [f.function for f in frames]
    jit = names.index(next(n for n in names if n.startswith("[jit ")))
    assert names[jit - 1] == "jit_callback", output
    assert "its code cannot be read" in frames[jit].line, output
    assert "--style full" in frames[jit].line, output
    # The caller found by the stack scan is LLDB's native frame: the JIT frame says so.
    assert "[its caller: guess: found by stack scan]" in frames[jit].line, output
    assert names[jit - 1:] == ["jit_callback", names[jit], "call_jit", "jit_callback",
                               names[jit], "call_jit", "main"], output
    assert not any("[unwind stopped: " in f.line for f in frames), output


def test_process_without_jit_code_keeps_lldb_frames():
    output = run_lldb(["process launch", "bt", "bt --provider 0", "jit-regions"],
                      [fixture_binary("deepstack"), "20"])
    plain = output.split("(lldb) bt --provider 0")[1].split("(lldb) jit-regions")[0]
    ours = output.split("(lldb) bt\n")[1].split("(lldb) bt --provider 0")[0]
    def lines(text):  # without the marker of the selected frame
        return [f.line.replace("* frame", "frame").strip() for f in parse_lldb_backtrace(text)]

    assert lines(ours) == lines(plain), output
    assert len(parse_lldb_backtrace(ours)) > 20, output
    assert "No JIT regions" in output, output


def test_commands_have_help_and_need_a_process():
    output = run_lldb(["help jit-regions", "help py-mixed-bt", "jit-regions"],
                      [fixture_binary("toyjit")])
    assert "List the JIT code regions" in output, output
    assert "--all-threads" in output, output
    assert "No process" in output, output


def test_provider_on_a_target_created_before_the_import():
    output = run_lldb([f"command script import {LLDB_INIT}", "target frame-provider list",
                       "process launch", "bt"], program("mixed", 1), plugin=False)
    assert "JitFrameProvider" in output, output
    check_lldb_backtrace(output, "mixed", 1, perf_map=False)


def test_provider_on_every_target_created_after_the_import():
    """Two targets one after the other: the stop-hook copied from the dummy target puts
    the provider on each."""
    toyjit = fixture_binary("toyjit")
    output = run_lldb(["process launch", "bt", "process kill", "target delete",
                       f"target create {toyjit}",
                       "settings set -- target.run-args frameless 1 sigtrap",
                       "process launch", "bt"], program("fp", 1))
    first, second = output.split("(lldb) target delete")
    check_lldb_backtrace(first, "fp", 1, perf_map=False)
    check_lldb_backtrace(second, "frameless", 1, perf_map=False)


def test_settings_show_method_and_debug():
    """jit-unwind show-method on: bt at the same stop says how each JIT frame's caller
    was found, as GDB's set jit-unwind show-method does; debug prints one line per JIT
    frame unwound; each setting has help."""
    output = run_lldb(["help jit-unwind", "process launch", "jit-unwind", "bt",
                       "jit-unwind show-method on", "bt", "jit-unwind show-method maybe"],
                      program("mixed", 1))
    assert "show-method" in output and "python-frames" in output, output
    values = output.split("(lldb) jit-unwind\n")[1].split("(lldb) ")[0]
    assert values.split() == ["show-method:", "off", "debug:", "off", "python-frames:", "on",
                              "frame-format:", "on", "symbol-file:", "on", "jitdump:", "auto"]
    plain = output.split("(lldb) bt\n")[1].split("(lldb) jit-unwind show-method on")[0]
    shown = output.split("(lldb) jit-unwind show-method on")[1]
    assert "[via " not in plain and "jit-unwind: frame #" not in output, output
    jit = [f for f in parse_lldb_backtrace(shown) if f.function.startswith("[jit ")]
    assert jit and all(re.search(r"\[via [a-z-]+\]", f.line) for f in jit), output
    assert "usage: jit-unwind [SETTING on|off]" in output, output
    debug = run_lldb(["jit-unwind debug on", "process launch", "bt"], program("mixed", 1))
    assert re.search(r"^jit-unwind: frame #\d+ pc=0x[0-9a-f]+ sp=0x", debug, re.M), debug
