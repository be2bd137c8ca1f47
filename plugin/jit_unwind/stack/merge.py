"""Interleave Python frames with native frames: which native frame runs which Python frame.

Input: the native frames of one thread, innermost first, each classified (an eval-loop
frame ``_PyEval_EvalFrameDefault``, a JIT frame, anything else) and, for eval-loop frames,
the ``_PyInterpreterFrame *`` found in the frame (its ``frame`` variable) when the
debugger could read it; and the thread's Python frames, innermost first.

An eval-loop frame runs the Python frames from its interpreter-frame pointer outwards up
to and including its entry frame.  Python frames newer than that pointer (pushed by JIT
code, which keeps the current frame in a register) belong to the JIT frame just above
the eval loop, and so does the pointer's own frame when the JIT frame's trace was made
from its code (the eval loop entered the trace for it: the trace runs it now).  Without a
pointer, JIT frames take the Python frames up to the one running their trace's code
object, and eval-loop frames take the next group in order (counting), which is right as
long as no native frame is missing.
"""

from typing import List, Sequence

from ..model import EVAL, JIT, Merged, NativeFrame, PyFrame


class Merger:
    """Feed native frames innermost first; ask after each eval-loop frame what to show.

    Incremental so that a GDB frame filter can use it while frames stream by."""

    def __init__(self, python_frames: Sequence[PyFrame]):
        self._frames = list(python_frames)
        self._index = {frame.address: i for i, frame in enumerate(self._frames)}
        self._cursor = 0
        self._pending_jit: List[NativeFrame] = []
        self.result = Merged()

    @property
    def waiting_for_eval(self) -> bool:
        """True while JIT frames wait for the eval-loop frame that tells their share."""
        return bool(self._pending_jit)

    def add(self, native: NativeFrame) -> None:
        if native.kind == JIT:
            self._pending_jit.append(native)
        elif native.kind == EVAL:
            self._add_eval(native)

    def _add_eval(self, native: NativeFrame) -> None:
        start = self._index.get(native.interpreter_frame) if native.interpreter_frame else None
        if start is not None and start >= self._cursor:
            self.result.matched_by_pointer += 1
            if self._runs_jit_code(start):
                start += 1  # the eval loop's frame is the one its JIT trace runs
            elif self._pending_jit:
                # A pointer newer than the frame the trace runs is the trace's own
                # (3.15: the debugger unwinds the trace by CPython's CFI, which leaves
                # the eval loop's callee-saved registers as the trace had them).
                start = max(start, self._after_jit_code())
        else:
            start = self._after_jit_code() if self._pending_jit else self._cursor
            self.result.matched_by_count += 1
        newer = self._frames[self._cursor:start]
        if newer:
            owner = self._pending_jit[0].level if self._pending_jit else native.level
            self.result.by_level.setdefault(owner, []).extend(newer)
            if owner != native.level and newer[-1].is_entry:
                # The JIT code runs this eval loop's entry frame: nothing is left for
                # the eval loop itself.
                self._cursor = start
                self._pending_jit = []
                return
        end = start
        while end < len(self._frames) and not self._frames[end].is_entry:
            end += 1
        end = min(end + 1, len(self._frames))
        self.result.by_level.setdefault(native.level, []).extend(self._frames[start:end])
        self._cursor = end
        self._pending_jit = []

    def _jit_codes(self):
        return {jit.code_object for jit in self._pending_jit if jit.code_object}

    def _runs_jit_code(self, index: int) -> bool:
        """True when the pending JIT frames run a trace of the code of frame ``index``:
        the eval loop entered that trace for this frame, so the JIT frame runs it."""
        return (bool(self._pending_jit) and index < len(self._frames)
                and self._frames[index].code_address in self._jit_codes())

    def _after_jit_code(self) -> int:
        """Without the eval loop's pointer: JIT code runs the Python frames up to the
        first one (from the innermost) executing the code its trace was made from."""
        codes = self._jit_codes()
        for index in range(self._cursor, len(self._frames)):
            if self._frames[index].code_address in codes:
                return index + 1
            if self._frames[index].is_entry:
                break
        return self._cursor

    def finish(self) -> Merged:
        self.result.unclaimed = self._frames[self._cursor:]
        self._cursor = len(self._frames)
        return self.result


def merge(native_frames: Sequence[NativeFrame],
          python_frames: Sequence[PyFrame]) -> Merged:
    """Which Python frames each native frame runs (see the module docstring)."""
    merger = Merger(python_frames)
    for native in native_frames:
        merger.add(native)
    return merger.finish()
