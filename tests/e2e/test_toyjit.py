"""The toy JIT under real GDB 13 and 18: live process and a gcore core file."""


import pytest

from tests.support import (PRINT_PID, assert_no_unnamed_frames, fixture_binary,
                           parse_backtrace, remove_perf_map, run_gdb)
from tests.toyjit_expect import check_backtrace

SHOW_METHOD = "set jit-unwind show-method on"


def live_then_core(gdb, tmp_path, args, stop_commands=("run",)):
    """Run the toy JIT to its stop, bt, write a core; then bt on that core.
    Returns (live output, core output)."""
    toyjit = fixture_binary("toyjit")
    core = tmp_path / "toyjit.core"
    live = run_gdb(gdb, [SHOW_METHOD, *stop_commands, PRINT_PID, "bt", f"gcore {core}"],
                   [toyjit, *args])
    try:
        assert core.exists(), live
        from_core = run_gdb(gdb, [SHOW_METHOD, "bt"], [toyjit], core=core)
    finally:
        remove_perf_map(live)
    return live, from_core


@pytest.mark.parametrize("perf_map", [False, True], ids=["no-perf-map", "perf-map"])
@pytest.mark.parametrize("depth", [0, 1, 500])
@pytest.mark.parametrize("mode", ["fp", "frameless", "mixed"])
def test_backtrace_lists_exactly_the_true_frames(gdb, tmp_path, mode, depth, perf_map):
    args = [mode, str(depth), "sigtrap"] + (["--perf-map"] if perf_map else [])
    live, from_core = live_then_core(gdb, tmp_path, args)
    for output in (live, from_core):
        frames = parse_backtrace(output)
        assert_no_unnamed_frames(frames)
        check_backtrace(frames, mode, depth, perf_map)


@pytest.mark.parametrize("stop", ["sigtrap", "abort", "breakpoint"])
def test_every_way_of_stopping(gdb, tmp_path, stop):
    commands = ("break toy_stop", "run") if stop == "breakpoint" else ("run",)
    live, from_core = live_then_core(gdb, tmp_path, ["mixed", "3", stop], commands)
    for output in (live, from_core):
        frames = parse_backtrace(output)
        assert_no_unnamed_frames(frames)
        check_backtrace(frames, "mixed", 3, perf_map=False)
    if stop == "breakpoint":
        assert parse_backtrace(live)[0].function == "toy_stop"
    if stop == "abort":
        assert any("abort" in f.function for f in parse_backtrace(live))


def test_method_is_hidden_unless_asked(gdb):
    output = run_gdb(gdb, ["run", "bt"], [fixture_binary("toyjit"), "mixed", "1", "sigtrap"])
    frames = parse_backtrace(output)
    check_backtrace(frames, "mixed", 1, perf_map=False, show_method=False)
    assert "[via" not in output


@pytest.mark.parametrize("perf_map", [False, True], ids=["no-perf-map", "perf-map"])
def test_corrupt_frame_pointer_chain_ends_with_a_reason(gdb, tmp_path, perf_map):
    args = ["fp", "2", "sigtrap", "--corrupt-fp"] + (["--perf-map"] if perf_map else [])
    live, from_core = live_then_core(gdb, tmp_path, args)
    for output in (live, from_core):
        frames = parse_backtrace(output)
        names = [f.function for f in frames]
        assert_no_unnamed_frames(frames)
        last = frames[-1]
        assert names[-3:-1] == ["toy_stop", "jit_callback"], output
        assert "unwind stopped: frame pointer chain broken" in last.function, output
        assert "0x41414141" in last.function, output
        assert "main" not in names


def test_plugin_leaves_native_backtraces_alone(gdb):
    """A process with no JIT code gets exactly GDB's own backtrace."""
    program = [fixture_binary("toyjit"), "fp", "0", "breakpoint"]
    commands = ["break call_jit", "run", "bt"]
    with_plugin = run_gdb(gdb, commands, program)
    without = run_gdb(gdb, commands, program, plugin=False)
    lines = lambda text: [line for line in text.splitlines() if line.startswith("#")]
    assert lines(with_plugin) == lines(without) != []


def test_selecting_a_frame_keeps_what_the_unwinder_found(gdb):
    """GDB keeps its frames after "frame N" and does not ask the unwinder again: the
    backtrace after it still names the JIT frames and says why the walk ended."""
    output = run_gdb(gdb, [SHOW_METHOD, "run", "bt", "frame 1", "thread 1", "echo AGAIN\\n",
                           "bt"], [fixture_binary("toyjit"), "fp", "2", "sigtrap", "--corrupt-fp"])
    again = output.split("AGAIN\n", 1)[1]
    last = parse_backtrace(again)[-1]
    assert "unwind stopped: frame pointer chain broken" in last.function, again
    assert "[via frame-pointer]" in last.function, again
