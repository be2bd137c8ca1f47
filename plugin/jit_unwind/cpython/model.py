"""Plain data describing the Python side of a stopped CPython process.

Built by :mod:`.runtime`; innermost frame first, like a backtrace.  Nothing here reads
memory or knows about a debugger, so the objects can be kept, compared and printed.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple

__all__ = ["PyFrame", "PyThread", "PyInterpreter"]


@dataclass(frozen=True)
class PyFrame:
    """One Python function activation: a ``_PyInterpreterFrame``.

    ``address`` is the ``_PyInterpreterFrame *``, the key that ties this frame to the
    native ``_PyEval_EvalFrameDefault`` frame running it.  ``is_entry`` marks the first
    frame a ``_PyEval_EvalFrameDefault`` call ran (3.11: ``frame->is_entry``; 3.12+: the
    next older record is the eval loop's shim frame); the frames from one entry frame
    inwards up to the next entry frame share one native eval-loop frame.  ``owner`` is
    ``thread``, ``generator`` or ``frame-object``.  ``instr_address`` is 3.11/3.12's
    ``prev_instr`` or 3.13+'s ``instr_ptr``.  When the code object cannot be read,
    ``function`` is ``"<unknown>"`` and ``error`` says why.
    """

    address: int
    function: str
    filename: str
    line: Optional[int]
    is_entry: bool
    owner: str
    code_address: int
    instr_address: int
    name: str = ""
    firstlineno: Optional[int] = None
    error: str = ""

    @property
    def location(self) -> str:
        """``file:line``, or just the file name when the line is unknown."""
        return self.filename if self.line is None else f"{self.filename}:{self.line}"

    def __str__(self) -> str:
        if self.error:
            return f"<unknown Python frame at {self.address:#x}: {self.error}>"
        return f"{self.function} ({self.location})"


@dataclass(frozen=True)
class PyThread:
    """A ``PyThreadState`` and its Python frames, innermost first.

    ``thread_id`` is ``threading.get_ident()`` (the ``pthread_t``), ``native_thread_id``
    ``threading.get_native_id()`` (the LWP a debugger shows; None when not set yet).
    ``holds_gil`` is None when the GIL state could not be read.  ``stop_reason`` is empty
    when ``frames`` reaches the outermost frame, else it says why the walk stopped
    (unreadable memory, a loop, the frame limit).  ``name`` is left to adapters (e.g. from
    /proc/PID/task/TID/comm).  ``state`` is what a free-threaded build publishes of the
    thread: "attached" (may run Python now) or "detached"; None in GIL builds."""

    address: int
    interpreter_id: int
    thread_id: int
    native_thread_id: Optional[int]
    holds_gil: Optional[bool]
    frames: Tuple[PyFrame, ...]
    stop_reason: str = ""
    name: Optional[str] = None
    state: Optional[str] = None

    def eval_loop_groups(self) -> List[Tuple[PyFrame, ...]]:
        """``frames`` cut after each entry frame: one group per ``_PyEval_EvalFrameDefault``
        call, innermost first (a cut-off chain may end with a group without entry)."""
        groups: List[Tuple[PyFrame, ...]] = []
        current: List[PyFrame] = []
        for frame in self.frames:
            current.append(frame)
            if frame.is_entry:
                groups.append(tuple(current))
                current = []
        if current:
            groups.append(tuple(current))
        return groups


@dataclass(frozen=True)
class PyInterpreter:
    """A ``PyInterpreterState``: ``id`` 0 is the main interpreter."""

    address: int
    id: int
    threads: Tuple[PyThread, ...]
    stop_reason: str = ""
