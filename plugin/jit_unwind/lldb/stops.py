"""Stops LLDB makes and never shows, told from the thread's stop reason.

LLDB 23 makes the frame provider anew at every stop, its internal ones included, and
asks for frame 0 before it decides whether to stop; the provider has to decide then
what the whole stack will be (once it has answered frame 0, LLDB deadlocks on any
question about that frame).  A breakpoint hit that its ignore count swallows is never
shown, nor the single step over the breakpoint that LLDB makes right after it to go
on: LLDB's own frames do for both, at no cost."""

import ctypes
import threading
from typing import Dict, Tuple

import lldb

# Process unique id -> (thread id, stop id) of its last ignored hit.
_last_ignored: Dict[int, Tuple[int, int]] = {}
PR_GET_NAME = 16
# LLDB numbers its internal breakpoints from -1 down: the SB API gives them as unsigned.
INTERNAL_IDS = 1 << 63
_LIBC = ctypes.PyDLL(None)  # PyDLL: the call keeps the GIL
# Native thread id -> whether it is LLDB's private state thread.
_private_state: Dict[int, bool] = {}


def unseen_stop(thread: "lldb.SBThread") -> bool:
    """Whether ``thread``'s stop is one LLDB goes on from without showing it: an
    ignored breakpoint hit, or the step over that breakpoint in the stop after it.

    Asked on LLDB's private state thread only, where LLDB decides whether to stop: there
    the SB calls below take the target's private lock.  Elsewhere (the event thread
    reprinting a stop) they want the lock that a command on the main thread holds while
    it waits for our frames."""
    if not _on_private_state_thread():
        return False
    process = thread.GetProcess()
    reason = thread.GetStopReason()
    here = (thread.GetThreadID(), process.GetStopID())
    if reason == lldb.eStopReasonTrace:
        last = _last_ignored.get(process.GetUniqueID())
        return last is not None and (last[0], last[1] + 1) == here
    if reason == lldb.eStopReasonBreakpoint and _ignored_hit(thread, process.GetTarget()):
        _last_ignored[process.GetUniqueID()] = here
        return True
    return False


def _ignored_hit(thread: "lldb.SBThread", target: "lldb.SBTarget") -> bool:
    """Whether ``thread`` stopped at breakpoint locations whose ignore counts are all
    above zero (LLDB goes on without stopping; a condition, checked first, never makes
    such a hit a stop)."""
    count = thread.GetStopReasonDataCount()  # pairs: breakpoint id, location id
    if count < 2:
        return False
    for index in range(0, count - 1, 2):
        breakpoint_id = thread.GetStopReasonDataAtIndex(index)
        if breakpoint_id >= INTERNAL_IDS:
            # LLDB's own (a step's, a function call's): never looked up, as LLDB may
            # hold the breakpoint list while it waits for this stop (a call of an
            # indirect function's resolver as it places a breakpoint on it).
            return False
        breakpoint = target.FindBreakpointByID(breakpoint_id)
        if not breakpoint.IsValid():
            return False
        if breakpoint.GetIgnoreCount() > 0:
            continue
        location = breakpoint.FindLocationByID(thread.GetStopReasonDataAtIndex(index + 1))
        if not location.IsValid() or location.GetIgnoreCount() == 0:
            return False
    return True


def _on_private_state_thread() -> bool:
    """Whether this is LLDB's private state thread ("<lldb.process.internal-state…>",
    "intern-state" to the kernel), once per thread.  The name comes from prctl through
    a handle that keeps the GIL: no file to open, nothing that lets another thread run
    in the middle of a provider's answer (LLDB's event thread answers while the main
    thread waits on it: reprints.py)."""
    native = threading.get_native_id()
    known = _private_state.get(native)
    if known is None:
        known = _thread_name().startswith(b"intern-state")
        _private_state[native] = known
    return known


def _thread_name() -> bytes:
    name = ctypes.create_string_buffer(16)
    try:
        if _LIBC.prctl(PR_GET_NAME, name, 0, 0, 0) != 0:
            return b""
    except (AttributeError, OSError):
        return b""
    return name.value
