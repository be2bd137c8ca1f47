"""``bt``'s walk as a debugger's frame filter streams it: where it ends and what its last
frame says.  The adapter only decorates and fetches frames (callbacks); the rules are
here, so that ``bt`` and ``py-mixed-bt`` (``stack.walk``) end a walk alike."""

from __future__ import annotations

from typing import Callable, Iterator, Optional, Tuple, TypeVar

from ..debugger import DebuggerError, Frame
from .frame_label import walk_stopped
from ..stop.cache import StopCache
from .frames import remember_stop

Item = TypeVar("Item")  # a frame as the debugger's iterator gives it
Shown = TypeVar("Shown")  # the adapter's decorated frame


def filtered_walk(items: Iterator[Item], cache: StopCache,
                  decorate: Callable[[Item], Tuple[Shown, bool]],
                  frame_after: Callable[[Optional[Shown]], Optional[Item]],
                  frame_of: Callable[[Item], Frame],
                  stop_reason: Callable[[Shown], str],
                  with_note: Callable[[Shown, str], Shown]) -> Iterator[Shown]:
    """The debugger's frames (``items``), decorated, up to where the walk ends.

    ``decorate(item)``: (the shown frame, whether our unwinder ended the walk at it).
    The walk ends there on purpose (on GDB 13 a frame with a zero pc follows, which is
    no frame of the program), or where the debugger could not go on: then the last
    frame says why (``stop_reason(shown)``: the debugger's reason, "" for none).  One
    frame is held back until the next one shows whether it is the last.

    An error of the iterator (DebuggerError: the adapter turns its debugger's into one)
    loses the frame it was about to return (GDB's unwinds the frame after the one it
    returns): ``frame_after(shown)`` (None: the newest frame) fetches it again, and the
    error is kept for ``py-mixed-bt`` (``remember_stop``, ``frame_of(item)`` the core's
    view of it, DebuggerError when it has none): the debugger gives it once per frame
    and stop."""
    held = None  # (shown, ends walk) not yet yielded
    note = ""
    item: Optional[Item]  # frame_after's: None when it finds no frame
    while True:  # bounded: the debugger's iterator ends (its backtrace limit)
        try:
            item = next(items)
        except StopIteration:
            break
        except DebuggerError as error:  # the debugger could not unwind the next frame
            item = frame_after(held[0] if held else None)
            reason = str(error) or type(error).__name__
            note = walk_stopped(reason)
            if item is None:
                break
            try:
                remember_stop(frame_of(item), cache, reason)
            except DebuggerError:  # remembering is a bonus for py-mixed-bt
                pass
            if held is not None:
                yield held[0]
            held = decorate(item)
            break
        if held is not None:
            yield held[0]
        held = decorate(item)
        if held[1]:
            yield held[0]
            return
    if held is None:
        return
    last = held[0]
    if not note:
        reason = stop_reason(last)
        note = walk_stopped(reason) if reason else ""
    yield with_note(last, note) if note else last
