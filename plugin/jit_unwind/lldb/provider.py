"""LLDB 22+ scripted frame provider: LLDB's frames, with JIT frames unwound and named.

LLDB rebuilds providers at every stop, the dynamic loader's internal stops included:
without JIT code in the process, every index maps straight to LLDB's own frame.
Synthetic frames carry a pc and a name but no register context (LLDB 23.1 crashes on
``frame select`` of a scripted frame with one).
"""

import lldb
from lldb.plugins.scripted_frame_provider import ScriptedFrameProvider
from lldb.plugins.scripted_process import ScriptedFrame

from ..frames import walk_stopped
from .memory import LldbMemory
from .python import add_runtime_regions
from .state import region_map
from .symfile import in_symbol_file
from .walk import ThreadWalk

MAX_INPUT_FRAMES = 20000


class JitFrame(ScriptedFrame):
    """A frame the walk found: ``pc`` (None for a note ending the walk) and a name."""

    def __init__(self, thread, frame_id: int, pc, name):
        super().__init__(thread, None)
        self.id = frame_id
        self.pc = pc
        self.name = name

    def get_id(self):
        return self.id

    def get_pc(self):
        return self.pc if self.pc is not None else lldb.LLDB_INVALID_ADDRESS

    def get_function_name(self):
        return self.name

    def is_artificial(self):
        return False

    def get_register_context(self):
        return None


# LLDB 23.1 drops a ScriptedFrame whose pc lies in a module (and every frame after
# it): native frames the walk found are returned as {"pc": ...} dictionaries, which LLDB
# symbolises at the pc itself (a return address), so an inlined call shows the inlined
# function at that address, not its caller.


class JitFrameProvider(ScriptedFrameProvider):
    def __init__(self, input_frames, args):
        super().__init__(input_frames, args)
        self._frames = None

    @staticmethod
    def get_description():
        return "jit-unwind: unwinds and names JIT frames"

    def get_frame_at_index(self, index):
        if self._frames is None:
            self._frames = self._build()
        if self._frames is False:  # no JIT code: LLDB's own frames
            return index if index < self.input_frames.GetSize() else None
        if index >= len(self._frames):
            return None
        return self._frames[index]

    def _build(self):
        try:
            process = self.thread.GetProcess()
            regions, _problem = region_map(process)
            if not regions.has_jit():
                return False
            try:
                add_runtime_regions(process.GetTarget(), process, regions)
            except Exception:  # names are a bonus: unwind without them
                pass
            count = min(self.input_frames.GetSize(), MAX_INPUT_FRAMES)
            inputs = [self.input_frames.GetFrameAtIndex(i) for i in range(count)]
            walk = ThreadWalk(process.GetTarget(), LldbMemory(process), regions, inputs)
            frames = walk.run()
        except Exception as error:  # never a traceback in a backtrace
            return [self._note(0, walk_stopped(f"jit-unwind internal error: {error!r}"))]
        result = []
        for position, frame in enumerate(frames):
            if frame.index is not None:
                result.append(frame.index)
            elif frame.name is None or in_symbol_file(process.GetTarget(), frame.pc):
                result.append({"idx": position, "pc": frame.pc})
            else:
                result.append(JitFrame(self.thread, position, frame.pc, frame.name))
        return result

    def _note(self, position, name):
        return JitFrame(self.thread, position, None, name)
