"""One frame's label, as every backtrace prints it: GDB's ``bt`` (frame filter), LLDB's
``bt`` (frame provider; lldb-19's frame-format), and ``py-mixed-bt``.

A label is the frame's display name and its marks (a guess, how its caller was found,
why the walk ends after it); the Python frames a frame runs follow it as ``[py]``
frames.  Built here from the core's records (``stack.jit_label``/``describe``, the
StopCache) so the backtraces cannot drift apart; the adapters only place the strings.
"""

from __future__ import annotations

from ..records import record
from typing import Callable, Iterable, Optional, Tuple

from ..debugger import Frame
from ..model import NativeFrame, PyFrame
from .naming import jit_frame_name
from ..regions import RegionMap
from ..stop.cache import StopCache
from .frames import ended_by_unwinder, jit_label

# LLDB names a native caller itself: a guessed one is marked on the JIT frame above it.
CALLER_GUESSED = "[its caller: guess: found by stack scan]"
# A frame found by stack scan whose native caller was found so too: one mark, not two.
BOTH_GUESSED = "[guess: found by stack scan, and its caller]"
UNREADABLE = ("[its code cannot be read: a core file without it? LLDB's "
              "`process save-core --style full` keeps it]")
PYTHON_MARK = "[py]"
GUESS_MARK = "[guess: found by stack scan]"


def walk_stopped(reason: str) -> str:
    """The note on the last frame of a walk that ended early: our unwinder's reason, or
    the debugger's own (e.g. "Cannot access memory at address 0x7ffd0000fff8")."""
    return f"[unwind stopped: {reason}]"


def marks(frame: NativeFrame, show_method: bool = False) -> str:
    """What ``bt`` and ``py-mixed-bt`` print after a frame's name: a guess, how its
    caller was found (``show_method``), why the walk ends after it."""
    parts = []
    if frame.guess:
        parts.append(GUESS_MARK)
    if show_method and frame.method:
        parts.append(f"[via {frame.method}]")
    if frame.stop_reason:
        parts.append(walk_stopped(frame.stop_reason))
    return " ".join(parts)


@record
class Label:
    """``name``: None where the debugger's own name stays; ``marks``: "" for none."""

    name: Optional[str]
    marks: str = ""

    def __init__(self, name: Optional[str], marks: str = ""):
        # Written out: the record's compiled one is ~0.1 ms of the first bt.
        self.name = name
        self.marks = marks

    def text(self, debugger_name: Callable[[], str] = lambda: "??") -> str:
        """The name (``debugger_name()`` when we have none), then the marks."""
        name = self.name if self.name is not None else debugger_name()
        return f"{name} {self.marks}" if self.marks else name


def _joined(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def record_label(record: NativeFrame, show_method: bool) -> Label:
    """A frame record's label: its name (None: the debugger's) and marks."""
    return Label(record.name, marks(record, show_method))


def listed_label(record: NativeFrame, show_method: bool) -> Label:
    """``py-mixed-bt``'s label of a ``stack.describe`` record: always a name (the
    frame's, else its pc in hex and, as GDB's bt says it, the library holding it)."""
    name = record.function
    if record.name is None and record.library:
        name = f"{name} in ?? () from {record.library}"
    return Label(name, marks(record, show_method))


def bt_label(frame: Frame, pc: int, cache: StopCache, show_method: bool,
             fallback_name: Optional[str] = None, unreadable: bool = False,
             mark_caller_guess: bool = False) -> Optional[Label]:
    """``bt``'s label of ``frame`` (at ``pc``), or None when it is no JIT code, no guess
    and nothing our unwinder unwound: the debugger prints it as its own.

    ``fallback_name``: the name when no region names the frame (None: the debugger's
    own, and no label at all for a frame we know nothing of).  ``unreadable``: the
    core file lacks the frame's code.  ``mark_caller_guess``: the debugger names a
    native caller without our marks (LLDB), so a guessed one is marked here."""
    record = jit_label(frame, pc, cache)
    caller_guessed = mark_caller_guess and _native_caller_guessed(frame, pc, cache)
    both = caller_guessed and record is not None and record.guess
    extra = _joined(CALLER_GUESSED if caller_guessed and not both else "",
                    UNREADABLE if unreadable else "")
    if record is None:
        if fallback_name is None:
            return None
        return Label(fallback_name, extra)
    label = record_label(record, show_method)
    name = label.name if label.name is not None else fallback_name
    own = label.marks.replace(GUESS_MARK, BOTH_GUESSED, 1) if both else label.marks
    return Label(name, _joined(extra, own))


def may_have_label(pc: int, cache: StopCache) -> bool:
    """False when a frame at ``pc`` surely has no ``bt_label`` and our unwinder did not
    end the walk at it: neither JIT code (pc, or pc - 1 for a caller) nor a frame our
    unwinder handled or guessed.  One look, without the frame's sp."""
    return (pc in cache.unwound_pcs or pc in cache.guessed
            or cache.regions().near_jit(pc))


def bt_decoration(frame_of: Callable[[], Frame], pc: int, cache: StopCache,
                  show_method: bool) -> Tuple[Optional[Label], bool]:
    """A frame filter's view of the frame at ``pc``: its ``bt_label`` (None: the
    debugger prints it as its own) and whether our unwinder ended the walk at it.
    ``frame_of()`` makes the core's Frame, only for the few frames that may have a
    label: most frames of a JIT stack are native."""
    if not may_have_label(pc, cache):
        return None, False
    frame = frame_of()
    ends_walk = ended_by_unwinder(frame, cache) is not None
    return bt_label(frame, pc, cache, show_method), ends_walk


def _native_caller_guessed(frame: Frame, pc: int, cache: StopCache) -> bool:
    unwound = cache.unwound_at(pc, frame.sp)
    return (unwound is not None and unwound.guess and not (
        unwound.caller_pc is not None
        and cache.regions().jit_region_at(unwound.caller_pc - 1) is not None))


def unnamed_jit_name(pc: int) -> str:
    """A JIT frame's name when no region names it."""
    return f"[jit {pc:#x}]"


def format_name(cache: StopCache, pc: int, innermost: bool,
                registered_only: bool = False) -> Optional[str]:
    """lldb-19's frame-format label: the JIT frame's name (no marks: no walk ran), else
    None.  ``registered_only``: only code LLDB's JIT loader knows (a frame provider
    names the rest)."""
    lookup = pc if innermost else pc - 1
    if cache.regions().jit_region_at(lookup) is None:
        return None  # most frames: one lookup in this stop's region map
    regions = cache.named_regions()
    if registered_only and not names_registered_code(regions, lookup):
        return None  # the frame provider's frame, or LLDB's own name
    return jit_frame_name(regions, pc, innermost)


def names_registered_code(regions: RegionMap, lookup: int) -> bool:
    """``lookup`` is code LLDB's JIT loader has a module for and we name (CPython 3.15's
    traces): LLDB names such a frame from that module, not from a frame provider."""
    symbol = regions.symbol_at(lookup)
    return (symbol is not None and symbol.source != "gdb-jit"
            and regions.is_registered(lookup))


def names_registered_frame(cache: StopCache, pcs: Iterable[int]) -> bool:
    """A frame of a stack (``pcs``, innermost first) runs code LLDB's JIT loader names
    and we name too (see names_registered_code)."""
    regions = cache.regions()
    for index, pc in enumerate(pcs):
        lookup = pc if index == 0 else pc - 1
        if regions.jit_region_at(lookup) is not None and \
                names_registered_code(cache.named_regions(), lookup):
            return True
    return False


def python_name(frame: PyFrame) -> str:
    """A Python frame's name in ``bt`` (its file and line go in the frame's own
    fields)."""
    return f"{PYTHON_MARK} {frame.function}"


def python_line(frame: PyFrame) -> str:
    """A Python frame as one line of ``py-mixed-bt``: name (file:line)."""
    return f"{PYTHON_MARK} {frame}"
