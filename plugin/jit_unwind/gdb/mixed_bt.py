"""``py-mixed-bt``: the mixed native + Python stack, compact, as text or JSON."""

import argparse
from typing import List

import gdb

from ..cpython.thread_names import read_thread_names
from ..mixed import MixedThread, NativeFrame, mix
from ..naming import jit_frame_name
from ..render_mixed import render_text, to_json
from .debugger import GdbThread, gdb_stop_reason
from .frame_filter import walk_ended_by_unwinder
from .python_frames import classify, python_thread
from .state import STATE

MAX_FRAMES = 100_000


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise gdb.GdbError(f"py-mixed-bt: {message}. Try \"help py-mixed-bt\".")


PARSER = _Parser(prog="py-mixed-bt", add_help=False)
PARSER.add_argument("--all-threads", "-a", action="store_true")
PARSER.add_argument("--json", action="store_true")
PARSER.add_argument("--python-only", "-p", action="store_true")


def _native_frame(frame, level: int) -> NativeFrame:
    """``frame`` as py-mixed-bt lists it; GdbError when its pc cannot be read."""
    try:
        pc = frame.pc()
    except gdb.error as error:  # "PC not available": no frame to list
        raise gdb.GdbError(str(error)) from None
    info = classify(frame, level)
    name = None
    if info.kind == "jit":
        try:
            name = jit_frame_name(STATE.named_regions(), pc, level == 0)
        except Exception:  # a name is a bonus; the frame stays
            name = None
    if name is None:
        try:
            name = frame.name()
        except gdb.error:
            name = None
    filename = line = None
    try:
        sal = frame.find_sal()  # GDB looks a caller's line up at pc - 1 itself
        if sal.symtab is not None:
            filename, line = sal.symtab.filename, sal.line or None
    except gdb.error:
        pass
    return NativeFrame(level, pc, name or f"{pc:#x}", info.kind, filename, line,
                       info.interpreter_frame, info.code_object)


def _native_frames(thread) -> (List[NativeFrame], str):
    """The thread's native frames, innermost first, and why the walk ended early: our
    unwinder's reason, or GDB's (what plain ``bt`` prints as "Backtrace stopped: ...")."""
    thread.switch()
    frames: List[NativeFrame] = []
    try:
        frame = gdb.newest_frame()
    except gdb.error as error:
        return frames, str(error)
    while len(frames) < MAX_FRAMES:
        try:
            frames.append(_native_frame(frame, len(frames)))
        except gdb.GdbError as error:
            return frames, str(error)
        ended = walk_ended_by_unwinder(frame)
        if ended is not None:  # on GDB 13 a zero-pc frame follows: not the program's
            return frames, ended
        try:
            older = frame.older()
        except gdb.error as error:
            return frames, str(error)
        if older is None:
            return frames, gdb_stop_reason(frame)
        frame = older
    return frames, f"more than {MAX_FRAMES} frames"


def _mixed_thread(thread, python_only: bool, names) -> MixedThread:
    try:
        python = python_thread(thread)
    except Exception:  # memory the runtime's structures need is unreadable: native only
        python = None
    mixed = MixedThread(thread.num, GdbThread(thread).native_id, thread.name, python,
                        names.get(python.thread_id) if python is not None else None)
    if not python_only:
        natives, mixed.stop_reason = _native_frames(thread)
        mixed.frames = mix(natives, python)
    return mixed


class PyMixedBt(gdb.Command):
    """Print the mixed native and Python stack of the selected thread.

Usage: py-mixed-bt [--all-threads] [--json] [--python-only]

Each native frame is followed by the Python frames it is running (function, file and
line), indented and marked [py]; JIT frames are named as in "bt".  Only memory is read:
nothing runs in the program, so this works on core files too.

  --all-threads, -a   every thread, with its Python thread name and which one holds
                      the GIL
  --json              one JSON document (schema: docs/py-mixed-bt.schema.json)
  --python-only, -p   only the Python frames, like py-bt; fast, no native unwinding"""

    def __init__(self):
        super().__init__("py-mixed-bt", gdb.COMMAND_STACK, gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        options = PARSER.parse_args(gdb.string_to_argv(argument))
        inferior = gdb.selected_inferior()
        if inferior.pid <= 0:
            raise gdb.GdbError("py-mixed-bt: no process: run a program or load a core file first.")
        runtime, reason = STATE.python_runtime()
        if runtime is None:
            raise gdb.GdbError(f"py-mixed-bt: {reason}")
        selected = gdb.selected_thread()
        threads = (sorted(inferior.threads(), key=lambda t: t.num) if options.all_threads
                   else [selected])
        try:
            frame = gdb.selected_frame()
        except gdb.error:
            frame = None
        try:
            try:
                names = read_thread_names(runtime)
            except Exception:  # names are a bonus
                names = {}
            mixed = [_mixed_thread(thread, options.python_only, names) for thread in threads]
        finally:
            selected.switch()
            if frame is not None and frame.is_valid():
                frame.select()
        if options.json:
            gdb.write(to_json(mixed, str(runtime.version), options.python_only) + "\n")
        else:
            gdb.write(render_text(mixed, options.python_only) + "\n")
