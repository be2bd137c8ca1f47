"""A thread's mixed stack: native frames, each with the Python frames it runs."""

from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar

from .merge import Merger
from ..model import MixedFrame, NativeFrame, PyFrame, PyThread

T = TypeVar("T")


def interleave(items: Iterable[T], native_of: Callable[[T, int], NativeFrame],
               python_frames: Sequence[PyFrame]) -> Iterator[Tuple[T, List[PyFrame]]]:
    """Yield each of ``items`` (innermost first; ``native_of(item, index)`` says which
    native frame it is) with the Python frames it runs, as soon as that is known.

    Lazy, so that a debugger's frame filter can stream: JIT frames are held back until
    the eval-loop frame below them says which Python frames are newer than its own
    (those run in JIT code); the last item is held back so that Python frames no native
    frame claimed still appear, under it."""
    merger = Merger(python_frames)
    held: List[Tuple[T, int]] = []  # (item, level) not yet yielded

    def release(count: int):
        for item, level in held[:count]:
            yield item, merger.result.by_level.get(level, [])
        del held[:count]

    for index, item in enumerate(items):
        native = native_of(item, index)
        merger.add(native)
        held.append((item, native.level))
        if not merger.waiting_for_eval:
            yield from release(len(held) - 1)
    result = merger.finish()
    if held and result.unclaimed:
        result.by_level.setdefault(held[-1][1], []).extend(result.unclaimed)
    yield from release(len(held))


def mix(natives: Sequence[NativeFrame], python: Optional[PyThread]) -> List[MixedFrame]:
    """Pair each native frame with the Python frames it runs; frames no native frame
    claimed go under the outermost native frame, so none is lost."""
    if python is None:
        return [MixedFrame(native) for native in natives]
    return [MixedFrame(native, list(frames))
            for native, frames in interleave(natives, lambda native, _index: native,
                                             python.frames)]


def native_last(frames: Sequence[MixedFrame]) -> List[MixedFrame]:
    """pystack's ``--native-last``: every Python frame, but of the native frames only
    those inner to the innermost one running Python (what the last Python call is doing
    in C), then only the frames holding Python frames.  Without Python, all of them."""
    for index, frame in enumerate(frames):
        if frame.python:
            return list(frames[:index]) + [outer for outer in frames[index:] if outer.python]
    return list(frames)
