"""What ``bt`` and ``py-mixed-bt`` print of a native frame besides its name: the marks
(a guess, or why the walk ends after it).  The records (``NativeFrame``, ``FrameKind``)
are in :mod:`.model`."""

from .model import EVAL, JIT, OTHER, FrameKind, NativeFrame

__all__ = ["EVAL", "JIT", "OTHER", "FrameKind", "NativeFrame", "EVAL_FUNCTION", "GUESS_MARK",
           "walk_stopped", "marks"]

EVAL_FUNCTION = "_PyEval_EvalFrameDefault"
GUESS_MARK = "[guess: found by stack scan]"


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
