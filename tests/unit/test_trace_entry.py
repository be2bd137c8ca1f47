"""The eval loop under a CPython JIT trace: its stale copy of the interpreter frame is
reported unknown, the rest of what its entry shim restores is kept."""

from jit_unwind.model import PyFrame, PyThread
from jit_unwind.model import Unwound
from jit_unwind.unwind.trace_entry import stale_frame_addresses, without_stale_frames


def _frame(address, entry=False):
    return PyFrame(address, f"f{address:x}", "app.py", 1, entry, "thread", 0x900, 0)


def _thread(*frames):
    return PyThread(0x7000, 0, 1, 2, True, frames)


SHIM = Unwound("prologue", caller_pc=0x401000, caller_sp=0x7ff0,
               saved={"rbx": 0x1100, "r12": 0x42, "r14": 0x7000})


def test_a_frame_the_trace_pushed_past_is_hidden():
    # leaf (0x1200) pushed by the trace over hot (0x1100), the frame the loop entered it for
    thread = _thread(_frame(0x1200), _frame(0x1100), _frame(0x1000, entry=True))
    result = without_stale_frames(SHIM, stale_frame_addresses(thread))
    assert result.saved == {"r12": 0x42, "r14": 0x7000}
    assert (result.caller_pc, result.caller_sp) == (SHIM.caller_pc, SHIM.caller_sp)


def test_the_running_frame_is_kept():
    # The trace pushed nothing: the loop's copy is the frame running now.
    thread = _thread(_frame(0x1100), _frame(0x1000, entry=True))
    assert without_stale_frames(SHIM, stale_frame_addresses(thread)) is SHIM


def test_innermost_frame_of_an_older_eval_loop_call_is_kept():
    thread = _thread(_frame(0x1300, entry=True), _frame(0x1100), _frame(0x1000, entry=True))
    assert without_stale_frames(SHIM, stale_frame_addresses(thread)) is SHIM


def test_no_stale_frame_changes_nothing():
    assert without_stale_frames(SHIM, frozenset()) is SHIM
