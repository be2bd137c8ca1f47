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


# What the first frame in JIT code imports (gdb/unwinder.py), never the stop.
WALK_IMPORTED = ('python import sys; print("walk imported:", '
                 '"jit_unwind.unwind.native_step" in sys.modules, '
                 '"jit_unwind.stack.bt_walk" in sys.modules, '
                 '"jit_unwind.unwind.cfi" in sys.modules)')


def test_the_first_jit_frame_imports_the_walk_and_a_plain_program_never_does(gdb):
    """A stop in a JIT process imports none of the walk's modules (GDB shows frame 0,
    native code); the first frame that runs JIT code does; a program without JIT code
    stops and unwinds without them."""
    jit = run_gdb(gdb, ["run", WALK_IMPORTED, "bt", WALK_IMPORTED],
                  [fixture_binary("toyjit"), "fp", "2", "sigtrap"])
    at_stop, _, after_bt = jit.partition("walk imported: False False False")
    # unwind/cfi only when a frame needs a file's CFI or a stack scan (not here).
    assert at_stop and "walk imported: True True " in after_bt, jit
    lines = _bt_lines(after_bt)
    assert sum("[jit 0x" in line for line in lines) == 3 and "main" in lines[-1], jit
    plain = run_gdb(gdb, ["run", "bt", WALK_IMPORTED], [fixture_binary("deepstack"), "5"])
    assert "walk imported: False False False" in plain, plain
    assert "main" in _bt_lines(plain)[-1], plain
