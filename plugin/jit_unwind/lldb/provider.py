"""LLDB 22+ scripted frame provider: LLDB's frames, with JIT frames unwound and named,
and the Python frames each eval-loop and JIT frame runs.

LLDB rebuilds providers at every stop, the dynamic loader's internal stops included: a
process with no JIT code and no CPython gets LLDB's own frames at once.  Otherwise the
thread's walk (``thread_walk.ThreadWalk``) is made once per stop and kept in the StopCache,
where ``py-mixed-bt`` finds it; JIT frames are named and marked from what the walk
recorded there (``stack.jit_label``), as GDB's ``bt`` names and marks them.

Synthetic frames carry a pc (or none) and a name but no register context (LLDB 23.1
crashes on ``frame select`` of a scripted frame with one), each with its own id.
"""

import traceback

import lldb
from lldb.plugins.scripted_frame_provider import ScriptedFrameProvider
from lldb.plugins.scripted_process import ScriptedFrame

from .. import mixed
from . import frame_format
from ..decoration_gate import needs_decorating, walk_kept_inputs
from ..frame_label import bt_label, names_registered_frame, python_name, unnamed_jit_name
from ..frame_label import walk_stopped
from ..stack import MAX_FRAMES, classify
from .debugger import (PASSTHROUGH, build_frames, provider_walk_key,
                       return_address_frames, symbolised_alike, walk_thread)
from .settings import debug_log, setting, show_method
from .state import cache_for
from .symfile import in_symbol_file


class NamedFrame(ScriptedFrame):
    """A frame the walk found (``pc``), a note ending the walk, or a Python frame (no
    pc; ``source`` is its (file, line))."""

    def __init__(self, thread, frame_id: int, pc, name, source=None):
        super().__init__(thread, None)
        self.id = frame_id
        self.pc = pc
        self.name = name
        self.source = source

    def get_id(self):
        return self.id

    def get_pc(self):
        return self.pc if self.pc is not None else lldb.LLDB_INVALID_ADDRESS

    def get_function_name(self):
        return self.name

    def get_symbol_context(self):
        if self.source is None:
            return None
        filename, line = self.source
        entry = lldb.SBLineEntry()
        entry.SetFileSpec(lldb.SBFileSpec(filename, False))
        if line:
            entry.SetLine(line)
        context = lldb.SBSymbolContext()
        context.SetLineEntry(entry)
        return context

    def is_artificial(self):
        return False

    def get_register_context(self):
        return None


class NativeFrame(ScriptedFrame):
    """A native caller the walk found where LLDB's own frames went wrong: at return
    address ``pc``, with the symbol context LLDB gives its own callers there (looked up
    at ``pc - 1``, one per inlined function), so its name, line and inlined frames are
    those LLDB shows without JIT code.  A dictionary ``{"pc": ...}`` would be looked up
    at ``pc`` itself: a call ending a function would name the next one.

    It defines each method itself, as NamedFrame does: made a subclass of NamedFrame, or
    both of a common base, LLDB 23.1 dropped these frames and every frame after them."""

    def __init__(self, thread, frame_id: int, pc: int, context):
        super().__init__(thread, None)
        self.id = frame_id
        self.pc = pc
        self.context = context

    def get_id(self):
        return self.id

    def get_pc(self):
        return self.pc

    def get_function_name(self):
        block = self.context.GetBlock()
        if block.IsValid() and block.GetInlinedName():
            return block.GetInlinedName()
        symbol = self.context.GetSymbol()
        return self.context.GetFunction().GetName() or (
            symbol.GetName() if symbol.IsValid() else None)

    def get_symbol_context(self):
        return self.context

    def is_inlined(self):
        block = self.context.GetBlock()
        return block.IsValid() and bool(block.GetInlinedName())

    def is_artificial(self):
        return False

    def get_register_context(self):
        return None


class JitFrameProvider(ScriptedFrameProvider):
    def __init__(self, input_frames, args):
        super().__init__(input_frames, args)
        self._frames = None
        self._input_count = None

    @staticmethod
    def get_description():
        return "jit-unwind: unwinds and names JIT frames, adds Python frames"

    def get_frame_at_index(self, index):
        if self._frames is None:
            self._frames = self._build()
        if self._frames is False:  # no JIT code, no Python: LLDB's own frames
            if self._input_count is None:  # SBFrameList.GetSize costs ~30 µs a call
                self._input_count = self.input_frames.GetSize()
            return index if index < self._input_count else None
        if index >= len(self._frames):
            return None
        return self._frames[index]

    def _build(self):
        try:
            cache = cache_for(self.thread.GetProcess())
            key = provider_walk_key(self.thread.GetThreadID())
            python = setting("python-frames") and cache.is_python_process()
            if not needs_decorating(cache, lambda: python):
                cache.per_stop(key, lambda: PASSTHROUGH)
                return False
            count = min(self.input_frames.GetSize(), MAX_FRAMES)
            inputs = [self.input_frames.GetFrameAtIndex(i) for i in range(count)]
            steps = cache.per_stop(key, lambda: walk_thread(cache, inputs))
            if steps is PASSTHROUGH:
                return False
            if names_registered_frame(cache, (frame.GetPC() for frame in inputs)):
                # LLDB names those frames from its JIT loader's module: our names
                # come through its frame-format (lldb/frame_format.py).
                frame_format.apply_once(self.thread.GetProcess().GetTarget().GetDebugger())
            if not needs_decorating(cache, lambda: python,
                                    lambda: not walk_kept_inputs(steps, count)):
                for step in steps:  # py-mixed-bt reads the output frames: LLDB's own
                    step.position = step.index
                return False
            return self._output(cache, steps, inputs, python)
        except Exception:  # never a traceback, never fewer frames: LLDB's own frames
            debug_log(lambda: f"frame provider error: {traceback.format_exc()}")
            return False

    def _output(self, cache, steps, inputs, python: bool):
        frames = build_frames(cache.process.target, steps, lambda step: inputs[step.index])
        below = self._python_frames(cache, frames) if python else {}
        frame_of = {}  # id(step) -> its (first) frame
        for frame in frames:
            frame_of.setdefault(id(frame.step), frame)
        result = []
        contexts = {}  # return address -> its symbol contexts
        for step in steps:
            step.position = len(result)
            if step.index is not None:
                result.append(step.index)
            elif step.pc is None:
                result.append(NamedFrame(self.thread, len(result), None,
                                         walk_stopped(step.note)))
            elif step.jit:
                label = bt_label(frame_of[id(step)], step.pc, cache, show_method(),
                                 unnamed_jit_name(step.pc), step.unreadable,
                                 mark_caller_guess=True)
                name, notes = label.name, label.marks
                if in_symbol_file(cache.process.target, step.pc) and \
                        not name.startswith("["):
                    # LLDB names it from our symbol file; a ScriptedFrame there crashes
                    # LLDB 23.1 on `image lookup -a $pc`, and LLDB shows the module's
                    # symbol instead of a ScriptedFrame's name, marks included: the
                    # marks ([guess…], [via…], [unwind stopped…]) follow as a pc-less
                    # frame, as the note of a walk that ends without a frame does.
                    result.append({"idx": len(result), "pc": step.pc})
                    if notes:
                        result.append(NamedFrame(self.thread, len(result), None, notes))
                else:
                    result.append(NamedFrame(self.thread, len(result), step.pc,
                                             label.text()))
            else:
                if step.pc not in contexts:  # a stack through JIT code repeats a few
                    target = cache.process.target
                    contexts[step.pc] = None if symbolised_alike(target, step.pc) else \
                        return_address_frames(target, step.pc)
                if contexts[step.pc] is None:  # a dictionary costs LLDB less
                    result.append({"idx": len(result), "pc": step.pc})
                for context in contexts[step.pc] or ():
                    result.append(NativeFrame(self.thread, len(result), step.pc, context))
            for frame in below.get(id(step), ()):
                result.append(NamedFrame(self.thread, len(result), None,
                                         python_name(frame),
                                         (frame.filename, frame.line)))
        return result

    def _python_frames(self, cache, frames):
        """id(step) -> the Python frames the core's merge puts under its frames."""
        try:
            thread = cache.python_thread(self.thread.GetThreadID())
        except Exception as error:  # Python frames are a bonus
            debug_log(f"cannot read Python frames: {error!r}")
            return {}
        if thread is None or not thread.frames:
            return {}
        below = {}
        for item in mixed.mix([classify(frame, cache) for frame in frames], thread):
            if item.python:
                step = frames[item.native.level].step
                below.setdefault(id(step), []).extend(item.python)
        return below
