"""LLDB 22+ scripted frame provider: LLDB's frames, with JIT frames unwound and named,
and the Python frames each eval-loop and JIT frame runs.

LLDB rebuilds providers at every stop, the dynamic loader's internal stops included: a
process with no JIT code and no CPython gets LLDB's own frames at once.  Otherwise the
thread's walk (``thread_walk.ThreadWalk``) is made once per stop and kept in the StopCache,
where ``py-mixed-bt`` finds it.  What each step shows (``walk_frames.shown_frames``:
JIT frames named and marked as GDB's ``bt`` names and marks them, Python frames under
the frames that run them) is the core's; this module makes LLDB's frames of it.

Synthetic frames carry a pc (or none) and a name but no register context (LLDB 23.1
crashes on ``frame select`` of a scripted frame with one), each with its own id.
"""

import traceback

import lldb
from lldb.plugins.scripted_frame_provider import ScriptedFrameProvider
from lldb.plugins.scripted_process import ScriptedFrame

from . import frame_format
from ..regions.core_notes import missing_executable
from ..stack.decoration_gate import needs_decorating, walk_kept_inputs
from ..stack.frame_label import names_registered_frame
from ..model import MAX_FRAMES
from ..stack.walk_frames import (BY_PC, INPUT, NAMED, PASSTHROUGH, provider_walk_key, python_below,
                                 shown_frames)
from .debugger import build_frames, return_address_frames, symbolised_alike, walk_thread
from .reprints import note_answer
from .stops import unseen_stop
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


class CallerFrame(ScriptedFrame):
    """A native caller the walk found where LLDB's own frames went wrong: at return
    address ``pc``, with the symbol context LLDB gives its own callers there (looked up
    at ``pc - 1``, one per inlined function), so its name, line and inlined frames are
    those LLDB shows without JIT code.  A dictionary ``{"pc": ...}`` would be looked up
    at ``pc`` itself: a call ending a function would name the next one.

    It defines each method itself, as NamedFrame does: made a subclass of NamedFrame, or
    both of a common base, LLDB 23.1 dropped these frames and every frame after them."""

    def __init__(self, thread, frame_id: int, pc: int, context, artificial: bool = False):
        super().__init__(thread, None)
        self.id = frame_id
        self.pc = pc
        self.context = context
        self.artificial = artificial  # a tail-calling function's (stack/tail_calls.py)

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
        return self.artificial

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
        answer = self._answer(index)
        note_answer()
        return answer

    def _answer(self, index):
        if self._frames is None:
            self._frames = False if unseen_stop(self.thread) else self._build()
        if self._frames is False:  # LLDB's own frames
            if index == 0:  # a stopped thread has a frame 0: no need to count them
                return 0
            if self._input_count is None:  # SBFrameList.GetSize unwinds the whole stack
                self._input_count = self.input_frames.GetSize()
            return index if index < self._input_count else None
        if index >= len(self._frames):
            return None
        return self._frames[index]

    def _build(self):
        try:
            cache = cache_for(self.thread.GetProcess())
            key = provider_walk_key(self.thread.GetThreadID())
            # A core without its executable: no place for Python frames among LLDB's.
            python = (setting("python-frames") and cache.is_python_process()
                      and not missing_executable(cache.process))
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
        except Exception:  # LLDB calls the provider: no traceback, no frame lost
            debug_log(lambda: f"frame provider error: {traceback.format_exc()}")
            return False

    def _output(self, cache, steps, inputs, python: bool):
        target = cache.process.target
        frames = build_frames(target, steps, lambda step: inputs[step.index])
        below = python_below(cache, self.thread.GetThreadID(), frames, debug_log) \
            if python else {}
        result = []
        contexts = {}  # return address -> its symbol contexts (None: a dictionary)
        for step, shown in shown_frames(steps, frames, cache, show_method(),
                                        lambda pc: in_symbol_file(target, pc), below):
            step.position = len(result)
            for item in shown:
                if item.kind == INPUT:
                    result.append(item.index)
                elif item.kind == BY_PC:
                    result.append({"idx": len(result), "pc": item.pc})
                elif item.kind == NAMED:
                    result.append(NamedFrame(self.thread, len(result), item.pc, item.name,
                                             item.source))
                else:  # a native caller: its frames as LLDB lists its own callers
                    if item.pc not in contexts:
                        contexts[item.pc] = None if symbolised_alike(target, item.pc) \
                            and not step.artificial \
                            else return_address_frames(target, item.pc)
                    if contexts[item.pc] is None:  # a dictionary costs LLDB less
                        result.append({"idx": len(result), "pc": item.pc})
                    for context in contexts[item.pc] or ():
                        result.append(CallerFrame(self.thread, len(result), item.pc,
                                                  context, step.artificial))
        return result
