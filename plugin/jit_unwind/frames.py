"""The data model of native frames, shared by ``bt``'s decorators, the merge with Python
frames and ``py-mixed-bt``: what kind of code a frame runs, its name, and what the
unwinder said about it (a guess, or why the walk ends after it)."""

from dataclasses import dataclass
from enum import Enum
from typing import Optional

EVAL_FUNCTION = "_PyEval_EvalFrameDefault"
GUESS_MARK = "[guess: found by stack scan]"


class FrameKind(str, Enum):
    EVAL = "eval"  # CPython's eval loop (_PyEval_EvalFrameDefault)
    JIT = "jit"  # code in a JIT region
    OTHER = "other"


EVAL = FrameKind.EVAL
JIT = FrameKind.JIT
OTHER = FrameKind.OTHER


@dataclass
class NativeFrame:
    """One native frame.  ``interpreter_frame``: an eval loop's ``frame`` variable
    (``_PyInterpreterFrame *``) when debug info has it; ``code_object``: for a JIT
    frame, the code object its trace was made from.  ``name`` is None when neither the
    debugger nor a JIT region names it.  ``guess``: the unwinder found this frame by a
    stack scan; ``stop_reason``: the unwinder ended the walk after this frame, and why;
    ``method``: the strategy that unwound this frame's caller."""

    level: int
    kind: FrameKind = OTHER
    interpreter_frame: Optional[int] = None
    code_object: Optional[int] = None
    pc: Optional[int] = None
    name: Optional[str] = None
    filename: Optional[str] = None
    line: Optional[int] = None
    guess: bool = False
    stop_reason: str = ""
    method: str = ""

    @property
    def function(self) -> str:
        """The name to print: the frame's name, else its pc in hex."""
        if self.name:
            return self.name
        return f"{self.pc:#x}" if self.pc is not None else "??"


def walk_stopped(reason: str) -> str:
    """The note on the last frame of a walk that ended early: our unwinder's reason, or
    the debugger's own (e.g. "Cannot access memory at address 0x7ffd0000fff8")."""
    return f"[unwind stopped: {reason}]"


def marks(frame: NativeFrame, show_method: bool = False) -> str:
    """What ``bt`` and ``py-mixed-bt`` print after a frame's name: a guess, how its
    caller was found (``show_method``), why the walk ends after it."""
    parts = []
    if frame.guess:
        parts.append(GUESS_MARK)
    if show_method and frame.method:
        parts.append(f"[via {frame.method}]")
    if frame.stop_reason:
        parts.append(walk_stopped(frame.stop_reason))
    return " ".join(parts)
