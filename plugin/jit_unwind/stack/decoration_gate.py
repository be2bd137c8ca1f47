"""Whether a thread's backtrace needs the plugin at all.

A stack without JIT code, Python frames or anything our unwinder did is exactly what the
debugger prints itself, and much faster: GDB prints every frame through a frame filter
as slowly as it unwinds it, LLDB rebuilds frame providers at every stop.  The adapters
ask here and keep the debugger's own frames when the answer is no."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from ..debugger import DebuggerError, Frame
from ..regions import RegionMap
from ..stop.cache import StopCache

# Beyond this many frames stack_runs_jit_code stops walking and says yes.
MAX_CHECKED_FRAMES = 20_000


def needs_decorating(cache: StopCache, python: Callable[[], bool],
                     stack_differs: Optional[Callable[[], bool]] = None,
                     always: bool = False) -> bool:
    """Whether to decorate a thread: ``always`` (e.g. show-method marks code without
    CFI anywhere), the process has JIT code and the thread's stack differs from the
    debugger's own (``stack_differs()``; None: not walked yet, so it may), or
    ``python()`` (Python frames to add).  JIT code first: ``python()`` may open the
    interpreter's files."""
    if always:
        return True
    if cache.regions().has_jit() and (stack_differs is None or stack_differs()):
        return True
    return python()


def thread_needs_decorating(cache: StopCache, thread_key: Callable[[], Optional[object]],
                            newest_frame: Callable[[], Frame], show_method: bool) -> bool:
    """needs_decorating for the selected thread (``thread_key()``: its key, None when
    there is none): Python frames to add, or JIT code on its stack (stack_runs_jit_code);
    with show-method always, for the frames in code without CFI ("[via prologue]")."""
    def stack_differs() -> bool:
        key = thread_key()
        return key is not None and stack_runs_jit_code(cache, key, newest_frame)

    return needs_decorating(cache, cache.is_python_process, stack_differs,
                            always=show_method)


def stack_runs_jit_code(cache: StopCache, thread_key,
                        newest_frame: Callable[[], Frame]) -> bool:
    """Whether a frame of a thread's stack (the debugger's own walk, from
    ``newest_frame()``) was unwound by us or runs JIT code we name (not the debugger:
    a JIT reader's code, and JIT code our unwinder left to it, print as the debugger
    prints them), once per thread (``thread_key``) and stop.  A walk that ended on an
    error needs nothing: GDB's own ``bt`` says why ("Backtrace stopped: ..."), which a
    frame filter would take away."""
    memo = cache.regions().memo
    key = ("thread-runs-jit-code", thread_key)
    if key not in memo:
        memo[key] = _walk_finds_jit_code(cache, newest_frame)
    return memo[key]


def _walk_finds_jit_code(cache: StopCache, newest_frame: Callable[[], Frame]) -> bool:
    regions = cache.regions()
    unwound = cache.unwound_pcs
    try:
        frame = newest_frame()
        innermost = True
        for _ in range(MAX_CHECKED_FRAMES):
            try:
                pc = frame.pc()
            except DebuggerError:  # "PC not available": no code to ask about
                pc = None
            if pc is not None and (pc in unwound or _names_jit_code(
                    cache, regions, pc if innermost else pc - 1)):
                return True
            older = frame.older()
            if older is None:
                return False
            frame = older
            innermost = False
    except DebuggerError:  # the debugger could not unwind further: it says why
        return False
    return True  # too deep to check: decorate


def _names_jit_code(cache: StopCache, regions: RegionMap, lookup: int) -> bool:
    """JIT code at ``lookup`` that the debugger does not name itself, where a frame our
    unwinder left to the debugger takes our name: a region's symbol, or ``[jit ...]``
    unless our unwinder declined it (its frame then is the debugger's own)."""
    if regions.jit_region_at(lookup) is None or cache.process.names_code(lookup):
        return False
    return cache.named_regions().symbol_at(lookup) is not None


def walk_kept_inputs(steps: Sequence, count: int) -> bool:
    """A walk over the debugger's ``count`` frames (steps with ``index``: which of
    them) kept every one as it was: nothing to change on this stack."""
    return len(steps) == count and all(step.index == index
                                       for index, step in enumerate(steps))
