"""A thread's frames from its walk (``thread_walk``'s Steps), for a debugger that lists
them itself (LLDB): which frames each step becomes, which Python frames go under them,
and what a frame provider shows for each step.  The adapter makes the debugger's
objects from these plain records; it decides nothing here.

A found native caller becomes one frame per function at its return address (inlined
functions first); a note ending the walk becomes the last frame's end reason; JIT
frames are named and marked as every backtrace does (``frame_label.bt_label``).
"""

from typing import (TYPE_CHECKING, Callable, Dict, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple)

from . import mixed
from ..debugger import DebuggerError, Frame
from .frame_label import bt_label, python_name, unnamed_jit_name, walk_stopped
from ..records import record
from ..target import JitUnwindError
from ..stop.cache import StopCache
from ..model import MAX_FRAMES, Text
from .frames import classify, nocfi_name
from .thread_walk import Step

if TYPE_CHECKING:
    class SteppedFrame(Frame):
        """A debugger's frame of walk_frames' list (LLDB's LldbFrame): it has its step."""

        step: Step

Source = Optional[Tuple[str, Optional[int]]]  # (file, line or None)
# pc -> (name, source) of each function at that return address, innermost first
Symbolise = Callable[[int], List[Tuple[Optional[str], Source]]]


@record
class WalkFrame:
    """One frame of the thread: an input frame's or a JIT frame's ``step`` as it is, or
    one function (``name``, ``source``) at a found native caller's return address.
    ``end_reason``: why the walk ended after it (the last frame only)."""

    step: Step
    name: Optional[str] = None
    source: Source = None
    end_reason: str = ""


# What a frame provider records for a thread whose frames it left as the debugger
# made them.
PASSTHROUGH = "lldb-frames"


def provider_walk_key(thread_id: int) -> tuple:
    """Where a frame provider keeps a thread's walk in the StopCache (per_stop)."""
    return ("lldb-walk", thread_id)


def thread_steps(cache: StopCache, thread_id: int,
                 run_provider: Optional[Callable[[], object]],
                 input_count: Callable[[], int],
                 fresh_walk: Callable[[], List[Step]]) -> Tuple[List[Step], bool]:
    """This stop's walk of a thread, and whether its steps index the thread's own
    frames (else: the provider's output frames, by ``position``).  The provider's walk
    when it made one (``run_provider()``, where there is one, makes it walk now); its
    ``input_count()`` frames as they are where it kept the debugger's; else (no provider
    ran: LLDB 19, or a stack listed before it was on) ``fresh_walk()``."""
    key = provider_walk_key(thread_id)
    walk = cache.known(key)
    if walk is None and run_provider is not None:
        run_provider()
        walk = cache.known(key)
    if walk is None:
        return fresh_walk(), True
    if walk is PASSTHROUGH:
        return [Step(index=i) for i in range(min(input_count(), MAX_FRAMES))], True
    return walk, False


def walk_frames(steps: Sequence[Step], symbolise: Symbolise) -> List[WalkFrame]:
    """The frames of a walk, at most MAX_FRAMES; ``symbolise`` is asked once per pc (a
    stack through JIT code repeats a few)."""
    frames: List[WalkFrame] = []
    symbolised: Dict[int, list] = {}
    for step in steps:
        if len(frames) >= MAX_FRAMES:
            break
        if step.pc is None and step.index is None:  # a note
            if frames:
                frames[-1].end_reason = step.note
            continue
        if step.index is not None or step.jit:
            frames.append(WalkFrame(step))
            continue
        pc = step.pc
        if pc is None:  # (a note, above: no index and no pc)
            continue
        if pc not in symbolised:
            symbolised[pc] = symbolise(pc)
        frames.extend(WalkFrame(step, name, source) for name, source in symbolised[pc])
    return frames


def python_below(cache: StopCache, thread_id: int, frames: Sequence["SteppedFrame"],
                 log: Callable = lambda _message: None) -> Dict[int, list]:
    """id(step) -> the Python frames the core's merge puts under that step's frames
    (``frames``: the thread's, each with its ``step``); {} when the thread runs none or
    they cannot be read (Python frames are a bonus)."""
    try:
        thread = cache.python_thread(thread_id)
    except JitUnwindError as error:  # the runtime's memory cannot be read
        log(f"cannot read Python frames: {error!r}")
        return {}
    if thread is None or not thread.frames:
        return {}
    below: Dict[int, list] = {}
    for item in mixed.mix([classify(frame, cache) for frame in frames], thread):
        if item.python:
            step = frames[item.native.level].step
            below.setdefault(id(step), []).extend(item.python)
    return below


class ShownKind(Text):
    """What a frame provider shows for a step (``Shown.kind``)."""

    INPUT = "input"  # the input frame ``index`` as LLDB made it
    BY_PC = "by-pc"  # a frame LLDB symbolises at ``pc`` itself (our symbol file's module)
    NATIVE = "native"  # a native caller at return address ``pc``: LLDB's symbols at pc - 1
    NAMED = "named"  # ``name`` (and ``source``) at ``pc``; no pc: a note or a Python frame


INPUT, BY_PC = ShownKind.INPUT, ShownKind.BY_PC
NATIVE, NAMED = ShownKind.NATIVE, ShownKind.NAMED


class Shown(NamedTuple):  # a tuple: a stack of thousands costs least to make
    kind: ShownKind
    # (the field shadows tuple.index, a method no one calls on a Shown)
    index: Optional[int] = None  # type: ignore[assignment]
    pc: Optional[int] = None
    name: Optional[str] = None
    source: Source = None


def shown_frames(steps: Sequence[Step], frames: Sequence["SteppedFrame"], cache: StopCache,
                 show_method: bool, in_symbol_file: Callable[[int], bool],
                 below: Dict[int, list]) -> Iterator[Tuple[Step, List[Shown]]]:
    """Each step with the frames a provider shows for it, then the Python frames it
    runs (``below``, from python_below).  ``frames``: the thread's (walk_frames'), as
    the debugger's Frames; ``in_symbol_file(pc)``: LLDB names that pc from our symbol
    file's module."""
    frame_of: Dict[int, "SteppedFrame"] = {}  # id(step) -> its (first) frame
    for frame in frames:
        frame_of.setdefault(id(frame.step), frame)
    for step in steps:
        if step.index is not None:
            shown = [_input_frame(step, frame_of.get(id(step)), cache)]
        elif step.pc is None:
            shown = [Shown(NAMED, name=walk_stopped(step.note))]
        elif step.jit:
            shown = _jit_frames(step, step.pc, frame_of[id(step)], cache, show_method,
                                in_symbol_file)
        else:
            shown = [_native_frame(step.pc, frame_of.get(id(step)), cache)]
        shown += [Shown(NAMED, name=python_name(frame), source=(frame.filename, frame.line))
                  for frame in below.get(id(step), ())]
        yield step, shown


def _input_frame(step: Step, frame: Optional[Frame], cache: StopCache) -> Shown:
    """A debugger's own frame as it is, unless it runs code without CFI it cannot name
    (V8's builtins remapped from node's executable): then named from the file."""
    pc = step.pc
    if frame is not None and pc is None:
        try:
            pc = frame.pc()
        except DebuggerError:  # a frame without a pc keeps the debugger's view
            pc = None
    name = nocfi_name(frame, pc, cache) if frame is not None and pc is not None else None
    if name is None:
        return Shown(INPUT, index=step.index)
    return Shown(NAMED, pc=pc, name=name)


def _native_frame(pc: int, frame: Optional[Frame], cache: StopCache) -> Shown:
    """A native caller the walk found (at ``pc``), as LLDB symbolises it, unless no
    module holds its code (V8's builtins remapped from node's executable): then named
    from the file."""
    name = nocfi_name(frame, pc, cache) if frame is not None else None
    if name is None:
        return Shown(NATIVE, pc=pc)
    return Shown(NAMED, pc=pc, name=name)


def _jit_frames(step: Step, pc: int, frame: Frame, cache: StopCache, show_method: bool,
                in_symbol_file: Callable[[int], bool]) -> List[Shown]:
    label = bt_label(frame, pc, cache, show_method, unnamed_jit_name(pc),
                     step.unreadable, mark_caller_guess=True)
    # With a fallback name, bt_label always gives a label, and a name.
    assert label is not None and label.name is not None
    if in_symbol_file(pc) and not label.name.startswith("["):
        # LLDB names it from our symbol file; a ScriptedFrame there crashes LLDB 23.1
        # on `image lookup -a $pc`, and LLDB shows the module's symbol instead of a
        # ScriptedFrame's name, marks included: the marks ([guess…], [via…], [unwind
        # stopped…]) follow as a pc-less frame, as the note of a walk that ends
        # without a frame does.
        return [Shown(BY_PC, pc=pc)] + (
            [Shown(NAMED, name=label.marks)] if label.marks else [])
    return [Shown(NAMED, pc=pc, name=label.text())]
