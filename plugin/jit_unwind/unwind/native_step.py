"""The one native step: the caller of one frame, for every reader.

``native_caller`` is the whole step, as the reader without a debugger (coreread/) and
LLDB's walk past the frames LLDB gave up on (stack/thread_walk.py) take it: our
strategies for the code they own (JIT code that is not the debugger's registered code,
a trace excepted; a mapped file's code without CFI), the outermost function (``main``),
the file's ``.eh_frame``, registered JIT code's frame-pointer rule, a function without
CFI known by its symbol, the frame-pointer rule where the function keeps one; a caller
must lie above its callee.  GDB's own unwinder runs GDB's rules for the rest, so GDB's
adapter asks only the first part (``leaves_to_debugger``, ``unwind_code``).

The adapter reads the frame's pc, sp and registers and hands back what is found; which
strategy applies, and when ours stand back for the debugger's rules, is decided here.
Imported once JIT code is met: it loads the strategies (those a walk may not need,
when first needed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Optional, Tuple

from ..arch import X86_64, Architecture
from ..model import Caller, Ending, Region, Unwound, ends_backtrace
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
    interface), or names itself (a runtime's JIT reader gives GDB the code's functions
    and their unwinder), that is no trace.  Asked before the adapter reads anything
    more."""
    if code.source == NOCFI:
        return False
    regions = cache.named_regions()
    if not regions.is_registered(lookup) and not cache.process.names_code(lookup):
        return False
    return not regions.is_trace(lookup)


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
        if result is not None and result.ends_walk and process.memory.try_read_u64(sp) is None:
            # No strategy found the caller and the stack at sp cannot be read: the
            # debugger's own rules fail the same way and say so in their own words
            # (GDB: "Cannot access memory at address SP"), its frame as plain GDB has it.
            return None
    if result is not None:
        cache.record(pc, sp, result)
    return result


def _no_stale_frames() -> Optional[FrozenSet[int]]:
    return None


def native_caller(cache: StopCache, pc: Optional[int], sp: Optional[int],
                  registers: Dict[str, int], innermost: bool,
                  name: Callable[[int], Optional[str]],
                  stale_frames: Callable[[], Optional[FrozenSet[int]]] = _no_stale_frames,
                  plain: bool = False,
                  file_address: Optional[Callable[[int], Optional[Tuple[str, int]]]] = None
                  ) -> Caller:
    """The caller of the frame at ``pc``/``sp`` with ``registers`` (those known):
    ``innermost`` for a frame the stop interrupted (its pc is no return address);
    ``name(lookup)`` its function's name as the reader shows it (asked only where the
    outermost rule needs it); ``plain``: none of our strategies (a debugger without
    jit-unwind, the fuzzer's model); ``file_address``: which file holds an address, for
    its CFI (the process's answer by default).  What our strategies find is recorded in
    ``cache`` for the frames' names and marks."""
    if pc is None or sp is None:
        return Caller(ending=Ending.NO_REGISTERS)
    process = cache.process
    arch = process.arch
    lookup = pc if innermost else pc - 1
    regions = cache.regions()
    # plain: the debugger's view, which knows JIT code (registered or not) but no rule
    # of ours for code without CFI.
    code = regions.jit_region_at(lookup) if plain else regions.code_at(lookup)
    registered = in_trace = False
    if code is not None and code.source != NOCFI:
        named = cache.named_regions()
        registered, in_trace = named.is_registered(lookup), named.is_trace(lookup)
    if code is not None and not plain and not leaves_to_debugger(cache, code, lookup):
        result = unwind_code(cache, code, pc, sp, registers.get, innermost, stale_frames,
                             arch)
        if result is not None:
            # ends_walk: the core says why (the cache's record)
            found = _found_caller(result, {} if in_trace else registers, arch)
            if found is None:
                return Caller(ending=Ending.OUTERMOST, unwound=result)
            return _checked(found, sp, innermost, arch, result)
    if ends_backtrace(name(lookup)):
        return Caller(ending=Ending.OUTERMOST)
    located = (file_address or process.file_address)(lookup)
    caller = _cfi_caller(process, located, registers, arch)
    if caller == {}:  # the CFI says so: _start, a thread's start routine
        return Caller(ending=Ending.OUTERMOST)
    if caller is None and registered:
        # Code registered through the debugger's JIT interface: its CFI as CPython
        # 3.15 registers it, the steady-state rule at every pc (CFA = frame pointer + 16).
        return _frame_record(process, registers, sp, innermost, arch)
    if caller is None and (code is None or code.source != NOCFI) and not plain:
        caller = _nocfi_by_symbol(cache, pc, sp, registers, lookup, arch)
    if caller is not None:
        return _checked(caller, sp, innermost, arch)
    start = process.function_start(lookup)
    if arch.frame_pointer_setup_at(process.memory, start) is None:
        return Caller(ending=Ending.NO_RULE)
    return _frame_record(process, registers, sp, innermost, arch)


def _found_caller(result: Unwound, registers: Dict[str, int],
                  arch: Architecture) -> Optional[Dict[str, int]]:
    """The caller's registers a strategy found: the callee-saved ones of ``registers``
    passed on, those it saved, its pc and sp; None when it ends the walk."""
    if result.caller_pc is None or result.caller_sp is None:
        return None
    caller = {name: value for name, value in registers.items() if name in arch.callee_saved}
    caller.update(result.saved)
    caller[arch.pc], caller[arch.sp] = result.caller_pc, result.caller_sp
    return caller


def _cfi_caller(process, located: Optional[Tuple[str, int]], registers: Dict[str, int],
                arch: Architecture) -> Optional[Dict[str, int]]:
    """The caller's registers by the .eh_frame of the file ``located`` names (its path
    and the frame's lookup pc in it)."""
    if located is None:
        return None
    from .cfi import unwind_with_cfi  # here: a walk that needs no file's CFI never reads one
    return unwind_with_cfi(process.memory, located[0], located[1], registers, arch)


def _nocfi_by_symbol(cache: StopCache, pc: int, sp: int, registers: Dict[str, int],
                     lookup: int, arch: Architecture) -> Optional[Dict[str, int]]:
    """A function without CFI the region map does not list (the debugger's symbol for
    it): our exact rules for such code (its prologue decoded from its symbol's start)."""
    symbol = cache.process.symbol_at(lookup)
    if symbol is None or symbol.start is None or symbol.end is None:
        return None
    if not symbol.start < pc <= symbol.end:
        return None
    function = Region(symbol.start, symbol.end, NOCFI, symbol.name)
    process = cache.process
    result = unwind_nocfi_code(pc, sp, process.memory, cache.regions(), registers.get,
                               False, process.function_start, function, arch)
    return _found_caller(result, registers, arch) if result is not None else None


def _frame_record(process, registers: Dict[str, int], sp: int, innermost: bool,
                  arch: Architecture) -> Caller:
    """The caller by the frame-pointer rule: the frame record at the frame pointer
    holds the caller's frame pointer and the return address."""
    fp = registers.get(arch.fp)
    if fp is None:
        return Caller(ending=Ending.NO_FRAME_POINTER)
    caller_pc = process.memory.try_read_u64(fp + 8)
    saved = process.memory.try_read_u64(fp)
    if caller_pc is None or saved is None:
        return Caller(ending=Ending.UNREADABLE_RECORD, address=fp)
    caller = {arch.pc: arch.code_address(caller_pc), arch.sp: fp + 16, arch.fp: saved}
    return _checked(caller, sp, innermost, arch)


def _checked(caller: Dict[str, int], sp: int, innermost: bool, arch: Architecture,
             unwound: Optional[Unwound] = None) -> Caller:
    """The caller, unless it cannot be the frame's: a pc below 16 is no return address
    (GDB ends its walk at a zero pc and shows one of 1 to 15 as a frame), and a caller's
    sp not above its callee's is a corrupt stack, but for a leaf the stop interrupted
    with its return address still in the link register (aarch64), which may share its
    caller's sp."""
    caller_pc = caller.get(arch.pc, 0)
    if caller_pc == 0:
        return Caller(registers=caller, ending=Ending.NO_RETURN_ADDRESS, unwound=unwound)
    caller_sp = caller[arch.sp]
    leaf = innermost and arch.link_register is not None and caller_sp == sp
    if caller_sp <= sp and not leaf:
        return Caller(ending=Ending.INNER, unwound=unwound)
    if caller_pc < 16:
        return Caller(registers=caller, ending=Ending.NO_RETURN_ADDRESS, unwound=unwound)
    return Caller(registers=caller, unwound=unwound)
