"""What a debugger's own unwinder (GDB's) asks the core about one frame: its caller,
by which strategy, with which registers.

The adapter reads the frame's pc, sp and registers and hands back what is found; which
strategy applies, and when ours stand back for the debugger's rules, is decided here.
Imported once JIT code is met: it loads the strategies (those a walk may not need,
when first needed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, FrozenSet, Optional

from ..arch import X86_64, Architecture
from ..model import Region, Unwound
from ..regions import RegionMap
from ..regions.nocfi import SOURCE as NOCFI
from ..regions.nocfi_pc import function_in
from ..stop.cache import StopCache
from ..target import Memory, RegisterReader
from . import UnwindContext, unwind_jit_frame, unwind_nocfi_frame, unwind_registered_trace

if TYPE_CHECKING:  # not at run time: typing's Callable[...] is ~0.05 ms of the first bt
    FunctionStart = Callable[[int], Optional[int]]


def unwind_jit_code(pc: int, sp: int, memory: Memory, regions: RegionMap,
                    read_register: RegisterReader, innermost: bool,
                    function_start: FunctionStart, registered: bool,
                    stale_frames: Callable[[], Optional[FrozenSet[int]]],
                    arch: Architecture = X86_64) -> Optional[Unwound]:
    """The caller of a frame in JIT code (``regions`` named).  ``registered``: the
    debugger has rules for the code (its JIT interface): ours only where they are exact
    and the debugger's not (a trace), else None.  ``stale_frames()``: the interpreter
    frames of this stop an eval loop's registers may hold stale copies of (see
    :func:`stale_frames`), None when unknown; asked only when the frame enters a trace."""
    ctx = UnwindContext(pc, sp, memory, regions, read_register, innermost,
                        function_start, arch=arch)
    if registered:
        result = unwind_registered_trace(ctx)
        if result is None:
            return None
    else:
        result = unwind_jit_frame(ctx)
    if ctx.enters_trace():  # CPython's JIT only: its module is imported here
        stale = stale_frames()
        if stale is not None:
            from .trace_entry import without_stale_frames
            result = without_stale_frames(result, stale)
    return result


def load_cfi_reader() -> None:
    """Import the files' CFI reader now (a stack scan checks a candidate caller in a
    file's code with it, importing it at the first): for an adapter that prepares a
    session's walks where JIT code is first found."""
    from . import cfi  # noqa: F401


def stale_frames(cache: StopCache, thread) -> FrozenSet[int]:
    """Interpreter frames of Python thread ``thread`` (a ``cpython.PyThread``) whose
    copies in an eval loop are older than the frames they run; read once per stop."""
    from .trace_entry import stale_frame_addresses
    return cache.per_stop(("stale-frames", thread.address),
                          lambda: stale_frame_addresses(thread))


def unwind_nocfi_code(pc: int, sp: int, memory: Memory, regions: RegionMap,
                      read_register: RegisterReader, innermost: bool,
                      function_start: FunctionStart, function: Optional[Region],
                      arch: Architecture = X86_64) -> Optional[Unwound]:
    """The caller of a frame in a mapped file's code without CFI, ``function`` its
    symbol: our exact strategies, else None (the debugger's own heuristics)."""
    ctx = UnwindContext(pc, sp, memory, regions, read_register, innermost,
                        function_start, function, arch=arch)
    return unwind_nocfi_frame(ctx)


def leaves_to_debugger(cache: StopCache, code: Region, lookup: int) -> bool:
    """Whether the debugger's own rules stand for a frame in ``code`` (this stop's
    ``regions().code_at(lookup)``): JIT code it has registered rules for (its JIT
    interface) that is no trace.  Asked before the adapter reads anything more."""
    if code.source == NOCFI:
        return False
    regions = cache.named_regions()
    return regions.is_registered(lookup) and not regions.is_trace(lookup)


def unwind_code(cache: StopCache, code: Region, pc: int, sp: int,
                read_register: RegisterReader, innermost: bool,
                stale_frames: Callable[[], Optional[FrozenSet[int]]],
                arch: Architecture = X86_64) -> Optional[Unwound]:
    """The caller of the frame at (``pc``, ``sp``) in ``code`` (see leaves_to_debugger),
    recorded in ``cache`` for ``bt``'s names and marks: code without CFI in a mapped
    file (:func:`unwind_nocfi_code`) or JIT code (:func:`unwind_jit_code`); None where
    the debugger's rules stand."""
    # The same frame again this stop (a repeated bt, frame, up: GDB unwinds again after
    # its frame cache is flushed): what was found, not the strategies' stack scans
    # again (~0.15 ms a JIT frame, most of HotSpot's repeated bt).
    known = cache.unwound_at(pc, lambda: sp)
    if known is not None:
        return known
    lookup = pc if innermost else pc - 1
    process = cache.process
    if code.source == NOCFI:
        result = unwind_nocfi_code(pc, sp, process.memory, cache.regions(), read_register,
                                   innermost, process.function_start,
                                   function_in(code, lookup), arch)
    else:
        regions = cache.named_regions()
        result = unwind_jit_code(pc, sp, process.memory, regions, read_register,
                                 innermost, process.function_start,
                                 regions.is_registered(lookup), stale_frames, arch)
    if result is not None:
        cache.record(pc, sp, result)
    return result
