"""A thread's frames from its walk, the Python frames under them, and what LLDB's frame
provider shows for each step (jit_unwind.stack.walk_frames), over the fake debugger of
test_thread_walk: no debugger runs."""

from jit_unwind.stack import walk_frames as module
from jit_unwind.debugger import DebuggerError, Frame
from jit_unwind.stack.frame_label import Label
from jit_unwind.model import PyFrame, PyThread
from jit_unwind.stop.cache import StopCache
from jit_unwind.target import MemoryReadError
from jit_unwind.stack.thread_walk import Step
from jit_unwind.stack.walk_frames import (BY_PC, INPUT, NAMED, NATIVE, PASSTHROUGH, Shown,
                                    provider_walk_key, python_below, shown_frames,
                                    thread_steps, walk_frames)

from .test_thread_walk import HELPER_RET, JIT_RET, MAIN_RET, STACK, FakeProcess

STEPS = [Step(index=0), Step(pc=JIT_RET, sp=STACK + 0x10, jit=True),
         Step(pc=HELPER_RET, sp=STACK + 0x20), Step(pc=HELPER_RET, sp=STACK + 0x40),
         Step(pc=MAIN_RET, sp=STACK + 0x60), Step(note="main's caller is unreadable")]


class WalkedFrame(Frame):
    """A frame of walk_frames' list as an adapter makes it: its step's pc and sp."""

    def __init__(self, level, record):
        self._level, self.record, self.step = level, record, record.step

    level = property(lambda self: self._level)

    def pc(self):
        if self.step.pc is None:
            raise DebuggerError("PC not available")
        return self.step.pc

    def sp(self):
        return self.step.sp

    def function_name(self):
        return self.record.name

    def register(self, name):
        return None


def _symbolise(asked):
    def symbolise(pc):
        asked.append(pc)
        if pc == HELPER_RET:  # an inlined function, then helper
            return [("inlined", ("/src/helper.c", 7)), ("helper", ("/src/helper.c", 20))]
        return [("main", None)]
    return symbolise


def _frames(steps):
    return [WalkedFrame(level, record)
            for level, record in enumerate(walk_frames(steps, _symbolise([])))]


def test_walk_frames_expands_native_callers_once_per_pc_and_ends_with_the_note():
    asked = []
    frames = walk_frames(STEPS, _symbolise(asked))
    assert [(frame.step, frame.name) for frame in frames] == [
        (STEPS[0], None), (STEPS[1], None), (STEPS[2], "inlined"), (STEPS[2], "helper"),
        (STEPS[3], "inlined"), (STEPS[3], "helper"), (STEPS[4], "main")]
    assert frames[2].source == ("/src/helper.c", 7)
    assert asked == [HELPER_RET, MAIN_RET]  # a pc repeated is symbolised once
    assert [frame.end_reason for frame in frames] == [""] * 6 + [
        "main's caller is unreadable"]


def test_walk_frames_keeps_the_frame_limit(monkeypatch):
    monkeypatch.setattr(module, "MAX_FRAMES", 3)
    frames = walk_frames(STEPS, _symbolise([]))
    assert len(frames) == 4  # the limit is checked per step: helper's two frames
    assert not any(frame.end_reason for frame in frames)
    assert walk_frames([Step(note="nothing before it")], _symbolise([])) == []


def _python(function):
    return PyFrame(address=0x1000, function=function, filename="app.py", line=3,
                   is_entry=True, owner="thread", code_address=0, instr_address=0)


def test_python_below_puts_unclaimed_frames_under_the_outermost_step(monkeypatch):
    cache = StopCache(FakeProcess({}))
    frames = _frames(STEPS)
    thread = PyThread(1, 0, 1, 1, True, (_python("f"), _python("g")))
    monkeypatch.setattr(cache, "python_thread", lambda thread_id: thread)
    below = python_below(cache, 1, frames)
    assert list(below) == [id(STEPS[4])]
    assert [frame.function for frame in below[id(STEPS[4])]] == ["f", "g"]


def test_python_below_without_python_frames(monkeypatch):
    cache = StopCache(FakeProcess({}))
    logged = []

    def unreadable(thread_id):
        raise MemoryReadError(0x10, 8)

    monkeypatch.setattr(cache, "python_thread", unreadable)
    assert python_below(cache, 1, _frames(STEPS), logged.append) == {}
    assert logged == ["cannot read Python frames: MemoryReadError('cannot read 8 bytes at "
                      "0x10')"]
    monkeypatch.setattr(cache, "python_thread", lambda thread_id: None)
    assert python_below(cache, 1, _frames(STEPS)) == {}


def test_shown_frames_of_each_step():
    cache = StopCache(FakeProcess({}))
    python = _python("f")
    steps = STEPS[:3] + [Step(note="stuck")]
    shown = dict((id(step), items) for step, items in shown_frames(
        steps, _frames(steps), cache, False, lambda pc: False, {id(steps[2]): [python]}))
    assert shown[id(steps[0])] == [Shown(INPUT, index=0)]
    assert shown[id(steps[1])] == [Shown(NAMED, pc=JIT_RET, name="[jit 0x70000000+0x6]")]
    assert shown[id(steps[2])] == [Shown(NATIVE, pc=HELPER_RET),
                                   Shown(NAMED, name="[py] f", source=("app.py", 3))]
    assert shown[id(steps[3])] == [Shown(NAMED, name="[unwind stopped: stuck]")]


def test_shown_frames_leave_named_jit_code_in_the_symbol_file_to_lldb(monkeypatch):
    """LLDB names such a frame from our module: a dictionary, the marks after it."""
    cache = StopCache(FakeProcess({}))
    steps = STEPS[:2]
    frames = _frames(steps)

    def shown(label, in_symbol_file):
        monkeypatch.setattr(module, "bt_label", lambda *args, **kwargs: label)
        return next(items for step, items in shown_frames(
            steps, frames, cache, False, lambda pc: in_symbol_file, {})
            if step is steps[1])

    guessed = Label("py::f", "[guess: found by stack scan]")
    assert shown(guessed, True) == [Shown(BY_PC, pc=JIT_RET),
                                    Shown(NAMED, name="[guess: found by stack scan]")]
    assert shown(Label("py::f"), True) == [Shown(BY_PC, pc=JIT_RET)]
    assert shown(guessed, False) == [
        Shown(NAMED, pc=JIT_RET, name="py::f [guess: found by stack scan]")]
    unnamed = Label(f"[jit {JIT_RET:#x}]")  # our own name, even in the module
    assert shown(unnamed, True) == [Shown(NAMED, pc=JIT_RET, name=unnamed.name)]


def test_thread_steps_prefers_the_providers_walk():
    cache = StopCache(FakeProcess({}))
    fresh = [Step(index=0)]
    ran = []

    def run_provider():  # the provider walks when LLDB lists the thread's frames
        ran.append(True)
        cache.per_stop(provider_walk_key(7), lambda: STEPS)

    assert thread_steps(cache, 7, None, lambda: 3, lambda: fresh) == (fresh, True)
    assert thread_steps(cache, 7, run_provider, lambda: 3, lambda: fresh) == (STEPS, False)
    assert thread_steps(cache, 7, run_provider, lambda: 3, lambda: fresh) == (STEPS, False)
    assert ran == [True]  # known for the rest of the stop


def test_thread_steps_of_a_thread_the_provider_left_alone(monkeypatch):
    cache = StopCache(FakeProcess({}))
    cache.per_stop(provider_walk_key(7), lambda: PASSTHROUGH)
    steps, direct = thread_steps(cache, 7, None, lambda: 3, lambda: 1 / 0)
    assert [step.index for step in steps] == [0, 1, 2] and direct
    monkeypatch.setattr(module, "MAX_FRAMES", 2)
    steps, _direct = thread_steps(cache, 7, None, lambda: 3, lambda: 1 / 0)
    assert len(steps) == 2
