"""Python frames as elided children of the native frames that run them, for ``bt``
(which native frame runs which: the core's ``stack.classify`` and ``merge``)."""

import sys
from typing import Iterator, Optional

import gdb
from gdb.FrameDecorator import FrameDecorator

from ..cpython import PyFrame, PyThread
from ..stack import mixed
from ..stack.frame_label import python_name
from ..stack.frames import classify
from .debugger import GdbFrame, GdbThread
from .state import STATE


def python_thread(thread=None) -> Optional[PyThread]:
    """The Python thread state running on GDB's selected (or given) thread."""
    thread = thread or gdb.selected_thread()
    if thread is None:
        return None
    return STATE.python_thread(GdbThread(thread).native_id)


class PythonFrameDecorator(FrameDecorator):
    """One Python frame, shown as an elided child of the native frame running it."""

    def __init__(self, base, frame: PyFrame):
        super().__init__(base)
        self._frame = frame

    def function(self):
        return python_name(self._frame)

    def address(self):
        # The CLI prints an address before the name unless this is None; GDB's DAP
        # server needs an address for every frame of a stackTrace.
        return self._base_pc() if "gdb.dap" in sys.modules else None

    def _base_pc(self):
        try:
            return self.inferior_frame().pc()
        except gdb.error:
            return 0

    def filename(self):
        return self._frame.filename

    def line(self):
        return self._frame.line

    def frame_args(self):
        return None

    def frame_locals(self):
        return None

    def elided(self):
        return None


def interleave(decorators: Iterator, thread: PyThread) -> Iterator:
    """Yield ``decorators`` (NativeFrameDecorators) with each native frame's Python
    frames attached (the core's ``mixed.interleave`` says which, streaming)."""
    def native_of(decorator, level):
        return classify(GdbFrame(decorator.inferior_frame(), level), STATE)

    for decorator, frames in mixed.interleave(decorators, native_of, thread.frames):
        if frames:
            decorator.python_frames = [PythonFrameDecorator(decorator, frame)
                                       for frame in frames]
        yield decorator
