"""The shortcuts that keep the plugin cheap change nothing a user sees (GDB 13 and 18):
native stacks of a process with JIT code print as plain GDB prints them, and after
stepping and continuing (the last stop's map kept for native code) JIT frames are
still found."""

import re

from tests.support import fixture_binary, parse_backtrace, run_gdb


def _bt_lines(output: str):
    return [line for line in output.splitlines() if line.startswith("#")]


def test_native_stack_of_a_jit_process_prints_as_plain_gdb(gdb):
    """The frame filter stays off for a thread without JIT frames: the same text."""
    program = [fixture_binary("deepstack"), "50", "--jit-page"]
    commands = ["run", "bt", "info jit-regions"]
    with_plugin = run_gdb(gdb, commands, program)
    plain = run_gdb(gdb, commands[:2], program, plugin=False)
    # The process has JIT code (the page), so the plugin's per-frame path runs.
    assert re.search(r"^0x[0-9a-f]+ +0x[0-9a-f]+ +0x1000 +maps", with_plugin, re.M), with_plugin
    lines = _bt_lines(with_plugin)
    assert len(lines) >= 50 and "main" in lines[-1], with_plugin
    assert lines == _bt_lines(plain)


def test_jit_frames_found_after_steps_and_a_continue(gdb):
    """Stopped in native code before any JIT code runs, stepped, then continued into a
    stop under JIT frames: the kept map must not hide the JIT code mapped since."""
    program = [fixture_binary("toyjit"), "fp", "2", "breakpoint"]
    # "frame 3" unwinds through the JIT frames right after the stop, before any bt
    # (whose frame filter would build a fresh region map first).
    output = run_gdb(gdb, ["break main", "run", "stepi", "stepi", "bt", "break toy_stop",
                           "continue", "frame 3", "bt"], program)
    last_bt = output[output.rindex("\n#0 ") + 1:]
    frames = parse_backtrace(last_bt)
    names = [frame.function for frame in frames]
    assert names[0] == "toy_stop", output
    assert sum(1 for name in names if name.startswith("[jit 0x")) == 3, output
    assert names[-1] == "main", output
