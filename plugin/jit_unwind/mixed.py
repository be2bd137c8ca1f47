"""A thread's mixed stack: native frames, each with the Python frames it runs."""

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from .cpython.model import PyFrame, PyThread
from .frames import NativeFrame
from .merge import merge


@dataclass
class MixedFrame:
    native: NativeFrame
    python: List[PyFrame] = field(default_factory=list)


@dataclass
class MixedThread:
    """``number`` and ``name`` are the debugger's; ``python`` is None for a thread that
    runs no Python code.  ``stop_reason`` says why the native walk ended early."""

    number: int
    lwp: int
    name: Optional[str]
    python: Optional[PyThread]
    python_name: Optional[str] = None
    frames: List[MixedFrame] = field(default_factory=list)
    unclaimed: List[PyFrame] = field(default_factory=list)
    stop_reason: str = ""


def mix(natives: Sequence[NativeFrame], python: Optional[PyThread]) -> List[MixedFrame]:
    """Pair each native frame with the Python frames it runs; frames no native frame
    claimed go under the outermost native frame, so none is lost."""
    frames = [MixedFrame(native) for native in natives]
    if python is None or not frames:
        return frames
    merged = merge(natives, python.frames)
    by_level = {frame.native.level: frame for frame in frames}
    for level, python_frames in merged.by_level.items():
        by_level[level].python.extend(python_frames)
    frames[-1].python.extend(merged.unclaimed)
    return frames
