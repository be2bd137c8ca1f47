"""Unwind one JIT frame: try each strategy in order, keep the first answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

from ..model import UnwindMethod, Unwound
from .caller_frame import caller_frame_pointer
from .context import UnwindContext
from .entry_record import unwind_entry_record
from .entry_return import unwind_entry_return
from .frame_pointer import unwind_chained_frame_pointer, unwind_frame_pointer
from .prologue import (known_start_applies, prologue_search_applies, unwind_known_start,
                       unwind_prologue_search)
from .runtime_entries import unwind_runtime_entry
from .stack_scan import unwind_stack_scan

if TYPE_CHECKING:  # not at run time: typing's Callable[...] is ~0.05 ms of the first bt
    Strategy = Callable[[UnwindContext], Optional[Unwound]]


def jitdump_cfi_applies(ctx: UnwindContext) -> bool:
    """Whether a jitdump unwind table has a row for this frame's pc (per pc).  Its
    module, and the .eh_frame reader it uses, are imported for the first pc a jitdump's
    unwind record covers: most JITs write none, and each module costs the first bt."""
    if ctx.regions.unwind_record_at(ctx.lookup_pc) is None:
        return False
    from . import jitdump_cfi
    return jitdump_cfi.jitdump_cfi_applies(ctx)


def unwind_jitdump_cfi(ctx: UnwindContext) -> Optional[Unwound]:
    """jitdump_cfi's strategy, asked only where :func:`jitdump_cfi_applies` (the plan)."""
    from . import jitdump_cfi
    return jitdump_cfi.unwind_jitdump_cfi(ctx)


# Most certain first.  Code whose JIT wrote its unwind table (a perf jitdump) follows
# the table: the code generator knows its frames.  A function whose start we know is
# decoded exactly; a trampoline found by its decodable prologue comes before the
# frame-pointer rule because such trampolines leave rbp untouched, and the caller's rbp
# would pass the rule's checks.  A runtime's entry frame (runtime_entries.py) is known
# exactly, with the registers it saved for its native caller.
STRATEGIES: List[Tuple[UnwindMethod, Strategy]] = [
    (UnwindMethod.ENTRY_RECORD, unwind_runtime_entry),
    (UnwindMethod.JITDUMP_CFI, unwind_jitdump_cfi),
    (UnwindMethod.PROLOGUE, unwind_known_start),
    (UnwindMethod.PROLOGUE_SEARCH, unwind_prologue_search),
    (UnwindMethod.FRAME_POINTER, unwind_frame_pointer),
    (UnwindMethod.ENTRY_RECORD, unwind_entry_record),
    (UnwindMethod.ENTRY_RETURN, unwind_entry_return),
    (UnwindMethod.STACK_SCAN, unwind_stack_scan),
]


# Code entered through an entry shim (CPython's JIT traces): its start is no prologue,
# so only the shim's return slot (a shim in JIT code, 3.13/3.14; a native function that
# keeps rbp, 3.15), or a guess, can tell.
TRACE_STRATEGIES = [item for item in STRATEGIES
                    if item[0] in (UnwindMethod.JITDUMP_CFI, UnwindMethod.ENTRY_RECORD,
                                   UnwindMethod.ENTRY_RETURN, UnwindMethod.STACK_SCAN)]


# What a strategy needs that depends on the pc alone (a table row, a named start whose
# code decodes, a function start found by searching): where it is missing, the strategy
# answers None at every frame with that pc, so the pc's plan leaves it out.
APPLIES: Dict[Strategy, Callable[[UnwindContext], bool]] = {
    unwind_jitdump_cfi: jitdump_cfi_applies,
    unwind_known_start: known_start_applies,
    unwind_prologue_search: prologue_search_applies,
}


def _plan(ctx: UnwindContext, name: str, strategies) -> List[Tuple[str, Strategy]]:
    """The strategies of ``strategies`` that can answer at this frame's pc, decided once
    per pc and stop: a stack through JIT code returns to the same few addresses."""
    key = ("named", name, ctx.pc, ctx.innermost)
    memo = ctx.regions.memo
    plan = memo.get(key)
    if plan is None:
        plan = memo[key] = [(strategy_name, strategy) for strategy_name, strategy in strategies
                            if strategy not in APPLIES or APPLIES[strategy](ctx)]
    return plan


def unwind_jit_frame(ctx: UnwindContext) -> Unwound:
    """The caller of the JIT frame in ``ctx``; ``ends_walk`` when nothing worked."""
    if ctx.in_trace():
        strategies = _plan(ctx, "trace-plan", TRACE_STRATEGIES)
    else:
        strategies = _plan(ctx, "jit-plan", STRATEGIES)
    for _name, strategy in strategies:
        result = strategy(ctx)
        if result is None:
            continue
        if result.ends_walk:
            return result
        if result.caller_sp is not None and ctx.plausible_caller_sp(result.caller_sp):
            return _with_caller_frame_pointer(ctx, result)
    return Unwound(method=UnwindMethod.NONE,
                   stop_reason="no strategy found the caller of this JIT frame")


def unwind_registered_trace(ctx: UnwindContext) -> Optional[Unwound]:
    """The caller of a trace the debugger has unwind rules for (CPython 3.15's,
    registered through GDB's JIT interface), where those rules skip the native function
    that entered it (``entry_return``); None leaves the frame to the debugger."""
    if not ctx.in_trace():
        return None
    result = unwind_entry_return(ctx)
    if result is None or result.caller_sp is None \
            or not ctx.plausible_caller_sp(result.caller_sp):
        return None
    return result


def kept_frame_pointer_applies(ctx: UnwindContext) -> bool:
    """Whether the function's known start sets up a frame pointer, and the pc is past
    that setup (per pc)."""
    start = ctx.function_start()
    setup = ctx.arch.frame_pointer_setup_at(ctx.memory, start)
    if start is None or setup is None:  # (no setup is known without a start)
        return False
    return ctx.pc >= start + setup  # before it, the frame pointer is not this frame's yet


def unwind_kept_frame_pointer(ctx: UnwindContext) -> Optional[Unwound]:
    """The frame-pointer rule, only for a function whose known start sets one up."""
    if not kept_frame_pointer_applies(ctx):
        return None
    return unwind_frame_pointer(ctx)


# Code without CFI in a mapped file (regions/nocfi.py): only what is exact or what the
# stack proves.  Where none answers, the debugger's own heuristics decide, as without
# us; the frame-pointer rule alone could skip the caller of code that leaves rbp alone
# (so without a prologue that sets it up, only where the chain validates above and no
# return address lies below rbp), the scans are guesses.  A runtime's entry code in its
# file (V8's Builtins_JSEntry) is known exactly, as in JIT code.
NOCFI_STRATEGIES: List[Tuple[UnwindMethod, Strategy]] = [
    (UnwindMethod.ENTRY_RECORD, unwind_runtime_entry),
    (UnwindMethod.PROLOGUE, unwind_known_start),
    (UnwindMethod.PROLOGUE_SEARCH, unwind_prologue_search),
    (UnwindMethod.FRAME_POINTER, unwind_kept_frame_pointer),
    (UnwindMethod.FRAME_POINTER, unwind_chained_frame_pointer),
]


APPLIES[unwind_kept_frame_pointer] = kept_frame_pointer_applies


def unwind_nocfi_frame(ctx: UnwindContext) -> Optional[Unwound]:
    """The caller of a frame in code without CFI, or None to leave it to the debugger."""
    for _name, strategy in _plan(ctx, "nocfi-plan", NOCFI_STRATEGIES):
        result = strategy(ctx)
        if result is None or result.ends_walk:
            continue
        if result.caller_sp is not None and ctx.plausible_caller_sp(result.caller_sp):
            return _with_caller_frame_pointer(ctx, result)
    return None


def _with_caller_frame_pointer(ctx: UnwindContext, result: Unwound) -> Unwound:
    """A caller found without its frame pointer (above a trace, or by a scan) gets it
    from its own prologue when it keeps one: GDB needs it for such a caller's CFA."""
    caller_pc, caller_sp = result.caller_pc, result.caller_sp
    if ctx.arch.fp not in result.saved and caller_pc is not None and caller_sp is not None:
        rbp = caller_frame_pointer(ctx, caller_pc, caller_sp)
        if rbp is not None:
            result.saved[ctx.arch.fp] = rbp
    return result
