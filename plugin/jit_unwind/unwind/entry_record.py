"""Unwind frameless JIT code by finding the entry trampoline that called it.

JITs enter generated code through a trampoline (CPython's shim, SpiderMonkey's EnterJIT)
that pushes the callee-saved registers and then calls the code, which keeps no frame
pointer and may clobber every register.  Above sp lies that call's return slot: a word
pointing right after a call inside JIT code whose function, decoded, pushes callee-saved
registers.  The trampoline is the caller; its own unwind restores what it pushed.
"""

from typing import Optional

from ..model import UnwindMethod, Unwound
from .context import UnwindContext
from .prologue import find_function_start

SCAN_WORDS = 1024


def unwind_entry_record(ctx: UnwindContext) -> Optional[Unwound]:
    for slot, value in ctx.stack_words(SCAN_WORDS):
        if ctx.regions.jit_region_at(value - 1) is None or not ctx.is_return_address(value):
            continue
        found = find_function_start(ctx, value)
        if found is None:
            continue
        _start, state = found
        if not state.pushed_callee_saved() or not state.calls:
            continue
        # The trampoline's own return address must be a return address too.
        trampoline_ret = ctx.memory.try_read_u64(slot + 8 + state.depth)
        if trampoline_ret is None or not ctx.is_return_address(trampoline_ret):
            continue
        # The trampoline restores what it pushed itself; what it did not push (rbp,
        # often) is still the caller's unless this code is a trace that keeps nothing.
        saved = {} if ctx.in_trace() else ctx.passed_through(ctx.arch.callee_saved)
        return Unwound(method=UnwindMethod.ENTRY_RECORD, caller_pc=value, caller_sp=slot + 8,
                       cfa=slot + 8, frame_start=ctx.function_start(), saved=saved)
    return None
