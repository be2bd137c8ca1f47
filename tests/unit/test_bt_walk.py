"""``bt``'s walk as a frame filter streams it (bt_walk.filtered_walk) and a filter's view
of one frame (frame_label.bt_decoration), with fake frames: no debugger."""

from jit_unwind.debugger import DebuggerError
from jit_unwind.stack.bt_walk import filtered_walk
from jit_unwind.stack.frame_label import Label, bt_decoration
from jit_unwind.model import Unwound
from jit_unwind.stack.frames import remembered_stop

from .test_frame_label import JIT_PC, NATIVE_PC, _cache
from .test_session import STACK, FakeFrame


class _Items:
    """A debugger's frame iterator over ``frames`` as the adapter passes it (its
    debugger's errors as DebuggerError), raising ``error`` instead of returning the
    frame at index ``fail_at``."""

    def __init__(self, frames, fail_at=None, error=""):
        self._frames = list(frames)
        self._index = 0
        self._fail_at, self._error = fail_at, error

    def __iter__(self):
        return self

    def __next__(self):
        if self._index == self._fail_at:
            self._index = len(self._frames)
            raise DebuggerError(self._error)
        if self._index >= len(self._frames):
            raise StopIteration
        self._index += 1
        return self._frames[self._index - 1]


def _walk(items, cache, ends_at=(), reasons=None, refetch=None):
    """Shown frames as (level, note) pairs."""
    reasons = reasons or {}
    return [shown for shown in filtered_walk(
        items, cache,
        decorate=lambda frame: ((frame.level, ""), frame.level in ends_at),
        frame_after=lambda shown: refetch(shown),
        frame_of=lambda frame: frame,
        stop_reason=lambda shown: reasons.get(shown[0], ""),
        with_note=lambda shown, note: (shown[0], note))]


def _frames(count):
    return [FakeFrame(level, NATIVE_PC + level, STACK + 0x100 * level, "f")
            for level in range(count)]


def test_walk_yields_every_frame_and_notes_the_debuggers_stop():
    cache = _cache()
    assert _walk(iter(_frames(3)), cache) == [(0, ""), (1, ""), (2, "")]
    assert _walk(iter(_frames(3)), cache, reasons={2: "previous frame identical"}) == [
        (0, ""), (1, ""), (2, "[unwind stopped: previous frame identical]")]
    assert _walk(iter([]), cache) == []


def test_walk_ends_where_our_unwinder_ended_it():
    """The frame after (GDB 13's zero-pc frame) is no frame of the program."""
    cache = _cache()
    assert _walk(iter(_frames(4)), cache, ends_at={1},
                 reasons={1: "not shown: the unwinder's mark says it"}) == [(0, ""), (1, "")]


def test_an_iterator_error_refetches_the_lost_frame_and_remembers_the_error():
    cache = _cache()
    frames = _frames(3)
    items = _Items(frames, fail_at=2, error="Cannot access memory at address 0x10")
    shown = _walk(items, cache, refetch=lambda held: frames[held[0] + 1])
    assert shown == [(0, ""), (1, ""),
                     (2, "[unwind stopped: Cannot access memory at address 0x10]")]
    assert remembered_stop(frames[2], cache) == "Cannot access memory at address 0x10"


def test_an_iterator_error_without_a_frame_to_refetch_notes_the_last_one():
    cache = _cache()
    frames = _frames(2)
    shown = _walk(_Items(frames, fail_at=2), cache, refetch=lambda held: None)
    assert shown == [(0, ""), (1, "[unwind stopped: DebuggerError]")]
    shown = _walk(_Items(frames, fail_at=0, error="no registers"), cache,
                  refetch=lambda held: None)
    assert shown == []


def test_bt_decoration_asks_for_the_frame_only_where_a_label_may_be():
    cache = _cache()
    asked = []

    def frame_of(frame):
        return lambda: asked.append(frame) or frame

    native = FakeFrame(1, NATIVE_PC, STACK + 0x100, "main")
    assert bt_decoration(frame_of(native), NATIVE_PC, cache, False) == (None, False)
    assert asked == []
    jit = FakeFrame(0, JIT_PC, STACK + 0x100)
    cache.record(JIT_PC, STACK + 0x100, Unwound("frame-pointer",
                                                stop_reason="bad rbp"))
    label, ends_walk = bt_decoration(frame_of(jit), JIT_PC, cache, False)
    assert asked == [jit] and ends_walk
    assert label == Label(f"[jit {JIT_PC - 0x10:#x}+0x10]", "[unwind stopped: bad rbp]")
