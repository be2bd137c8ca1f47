"""Unwind frameless JIT code by finding the entry trampoline that called it.

JITs enter generated code through a trampoline (CPython's shim, SpiderMonkey's EnterJIT)
that pushes the callee-saved registers and then calls the code, which keeps no frame
pointer and may clobber every register.  Above sp lies that call's return slot: a word
pointing right after a call inside JIT code whose function, decoded, pushes callee-saved
registers.  The trampoline is the caller; its own unwind restores what it pushed.
"""

from __future__ import annotations

from typing import Iterable, Optional

from ..model import UnwindMethod, Unwound
from .context import MAX_FRAME_SIZE, UnwindContext
from .prologue import find_function_start

SCAN_WORDS = 1024


def unwind_entry_record(ctx: UnwindContext) -> Optional[Unwound]:
    regions = ctx.regions
    low, high = regions.jit_bounds()
    # Words outside every JIT span are ruled out in one pass (up to 1,024 words: a
    # search per word was ~0.4 ms of a first bt), then near_jit's search, where
    # jit_region_at would search twice.
    for slot, value in [word for word in ctx.stack_words(SCAN_WORDS)
                        if low <= word[1] <= high]:
        if not regions.near_jit(value) or regions.jit_region_at(value - 1) is None \
                or not ctx.is_return_address(value):
            continue
        found = find_function_start(ctx, value)
        if found is None:
            continue
        _start, state = found
        if not state.pushed_callee_saved() or not state.calls:
            continue
        caller_sp = _trampoline_sp(ctx, slot, state)
        if caller_sp is None:
            continue
        # The trampoline restores what it pushed itself; what it did not push (rbp,
        # often) is still the caller's unless this code is a trace that keeps nothing.
        saved = {} if ctx.in_trace() else ctx.passed_through(ctx.arch.callee_saved)
        return Unwound(method=UnwindMethod.ENTRY_RECORD, caller_pc=value, caller_sp=caller_sp,
                       cfa=caller_sp, frame_start=ctx.function_start(), saved=saved)
    return None


# How far above the slot holding the return address into a trampoline the trampoline's
# sp may lie, where the code it called saved its link register inside its own frame.
MAX_LINK_SLOT_DEPTH = 4096


def _trampoline_sp(ctx: UnwindContext, slot: int, state) -> Optional[int]:
    """The trampoline's sp when it made the call whose return address is at ``slot``,
    checked: the trampoline's own return address, where its decoded prologue put it,
    must be one.  Where calls push the return address, the sp is right above the slot;
    where the callee saved its link register itself (aarch64), somewhere above it: the
    first 16-byte aligned sp whose trampoline frame holds a return address there."""
    arch = ctx.arch
    candidates: Iterable[int]
    if arch.return_address_pushed:
        candidates = [slot + 8]
        return_slot = 0
    else:
        return_slot = state.saved.get(arch.link_register)
        if return_slot is None:
            return None
        low = (slot + 8 + 15) & ~15
        candidates = range(low, min(low + MAX_LINK_SLOT_DEPTH, ctx.sp + MAX_FRAME_SIZE), 16)
    for caller_sp in candidates:
        address = ctx.memory.try_read_u64(caller_sp + state.depth + return_slot)
        if address is not None and ctx.is_return_address(arch.code_address(address)):
            return caller_sp
    return None
