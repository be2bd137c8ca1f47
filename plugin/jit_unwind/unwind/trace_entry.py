"""The eval loop that entered a CPython JIT trace, as its entry shim restores it.

The eval loop hands the trace its interpreter frame and, when the trace returns, reloads
the frame from the thread state (CPython's GOTO_TIER_TWO: ``frame =
tstate->current_frame``).  Meanwhile the copy it keeps in a callee-saved register, which
the shim saves and restores, is dead: once the trace has pushed frames of its own
(inlined calls) that copy names an older frame than the one running.  A reader of the
eval loop's ``frame`` variable (CPython's python-gdb.py: py-bt, py-up, py-list) then
starts its walk there and loses the trace's frames.  Such a register is reported unknown,
as the compiler reports the dead variable elsewhere (3.13's build: ``<optimized out>``);
the reader falls back to the thread state's current frame, where the walk is complete.
"""

from __future__ import annotations

from ..records import replace
from typing import FrozenSet

from ..model import PyThread, Unwound

__all__ = ["stale_frame_addresses", "without_stale_frames"]


def stale_frame_addresses(thread: PyThread) -> FrozenSet[int]:
    """Interpreter frames with a newer frame run by the same eval-loop call: an eval
    loop's copy of one of them is older than the frame it runs."""
    return frozenset(frame.address for group in thread.eval_loop_groups()
                     for frame in group[1:])


def without_stale_frames(unwound: Unwound, stale: FrozenSet[int]) -> Unwound:
    """``unwound`` (a shim's caller: the eval loop) without the registers that hold one
    of the ``stale`` interpreter frames (:func:`stale_frame_addresses`)."""
    if unwound.ends_walk or not unwound.saved or not stale:
        return unwound
    kept = {name: value for name, value in unwound.saved.items() if value not in stale}
    if len(kept) == len(unwound.saved):
        return unwound
    return replace(unwound, saved=kept)
