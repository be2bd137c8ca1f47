"""Name JIT frames in ``bt`` (and DAP stack traces), say how they were unwound, and add
the Python frames each native frame runs as its elided frames.

The filter is enabled only while the process has JIT code or a CPython runtime: with no
enabled filter GDB prints frames natively, which is faster, so other processes pay
nothing.
"""

from gdb.FrameDecorator import FrameDecorator

from ..naming import describe_unwind, jit_frame_name
from .python_frames import interleave, python_thread
from .python_runtime import is_python_process
from .settings import debug_log, show_method
from .state import STATE


class JitFrameDecorator(FrameDecorator):
    def __init__(self, base, name: str):
        super().__init__(base)
        self._name = name

    def function(self):
        return self._name


def _base_name(decorator) -> str:
    name = decorator.function()
    if isinstance(name, int):
        return f"{name:#x}"
    return name or "??"


def decorate(decorator):
    try:
        return _decorate(decorator)
    except Exception as error:  # never lose a frame over a naming problem
        debug_log(f"frame filter error: {error!r}")
        return decorator


def _decorate(decorator):
    frame = decorator.inferior_frame()
    pc = frame.pc()
    innermost = frame.level() == 0
    guessed = STATE.guessed.get(pc)
    if STATE.regions().jit_region_at(pc if innermost else pc - 1) is None and not guessed:
        return decorator
    name = jit_frame_name(STATE.named_regions(), pc, innermost)
    sp = _sp(frame)
    parts = [name if name is not None else _base_name(decorator)]
    if guessed and sp in guessed:
        parts.append("[guess: found by stack scan]")
    unwound = STATE.unwound.get((pc, sp))
    if unwound is not None:
        suffix = describe_unwind(unwound, show_method())
        if suffix:
            parts.append(suffix)
    return JitFrameDecorator(decorator, " ".join(parts))


class JitFrameFilter:
    """Frame filter "jit-unwind": names JIT frames, marks guesses, adds Python frames."""

    name = "jit-unwind"
    priority = 100

    def __init__(self):
        self._enabled = True

    @property
    def enabled(self):
        if not self._enabled:
            return False
        try:
            return STATE.regions().has_jit() or is_python_process()
        except Exception:
            return False

    @enabled.setter
    def enabled(self, value):  # "enable/disable frame-filter" sets this
        self._enabled = bool(value)

    def filter(self, frame_iter):
        frames = map(decorate, _until_walk_ends(frame_iter))
        try:
            thread = python_thread()
        except Exception as error:  # Python frames are a bonus; never lose the native ones
            debug_log(f"cannot read Python frames: {error!r}")
            thread = None
        if thread is None or not thread.frames:
            return frames
        return interleave(frames, thread)


def _until_walk_ends(frame_iter):
    """Frames up to one whose unwind ended the walk on purpose; the zero-pc frame that
    follows it on GDB 13 is not a frame of the program."""
    for decorator in frame_iter:
        yield decorator
        frame = decorator.inferior_frame()
        pc = frame.pc()
        if pc in STATE.unwound_pcs:
            unwound = STATE.unwound.get((pc, _sp(frame)))
            if unwound is not None and unwound.ends_walk:
                return


def _sp(frame) -> int:
    return int(frame.read_register("rsp"))
