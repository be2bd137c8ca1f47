"""Unwind a JIT frame that keeps a frame pointer: [fp] = caller's fp, [fp+8] = return
(rbp on x86-64, x29 on aarch64: the same frame record)."""

from __future__ import annotations

from typing import Optional

from ..model import UnwindMethod, Unwound
from .context import UnwindContext


def unwind_frame_pointer(ctx: UnwindContext) -> Optional[Unwound]:
    rbp = ctx.fp
    if rbp is None or rbp % 8 or rbp < ctx.sp or not ctx.is_stack_address(rbp):
        return None
    record = ctx.memory.try_read(rbp, 16)  # saved rbp and return address: one read
    caller_sp = rbp + 16
    if record is None or not ctx.plausible_caller_sp(caller_sp):
        return None
    saved_rbp = int.from_bytes(record[:8], "little")
    caller_pc = ctx.arch.code_address(int.from_bytes(record[8:], "little"))
    if not ctx.is_return_address(caller_pc) and not planted_return(ctx, caller_pc, saved_rbp):
        return None
    reason = ctx.broken_rbp_reason(saved_rbp, rbp, caller_pc)
    if reason:
        return Unwound(method=UnwindMethod.FRAME_POINTER, cfa=caller_sp,
                       frame_start=ctx.function_start(), stop_reason=reason)
    saved = {ctx.arch.fp: saved_rbp, **ctx.passed_through(ctx.arch.passed_through)}
    return Unwound(method=UnwindMethod.FRAME_POINTER, caller_pc=caller_pc, caller_sp=caller_sp,
                   cfa=caller_sp, frame_start=ctx.function_start(), saved=saved)


# How many frame records above a planted return address may hold planted ones too
# before one must hold a return address after a call.
MAX_PLANTED = 8


def planted_return(ctx: UnwindContext, caller_pc: int, saved_rbp: int) -> bool:
    """True for a return address with no call before it that a runtime planted (V8's
    deoptimizer: ``Builtins_InterpreterEnterAtNextBytecode+0``; HotSpot's interpreter
    return entries), believed only on evidence: it is code, and the chain keeps
    validating above it (:func:`chain_holds`)."""
    return ctx.regions.is_executable(caller_pc) and chain_holds(ctx, saved_rbp)


def chain_holds(ctx: UnwindContext, rbp: int) -> bool:
    """True when the frame records from ``rbp`` up look like a frame-pointer chain:
    each on the stack above the last and holding code, until one holds a return
    address after a call (at most MAX_PLANTED records) or the chain ends (saved rbp 0,
    as the outermost frame's)."""
    below = ctx.sp
    for _ in range(MAX_PLANTED):
        if rbp == 0:
            return True
        if rbp % 8 or rbp <= below or not ctx.is_stack_address(rbp):
            return False
        record = ctx.memory.try_read(rbp, 16)
        if record is None:
            return False
        address = ctx.arch.code_address(int.from_bytes(record[8:], "little"))
        if ctx.is_return_address(address):
            return True
        if not ctx.regions.is_executable(address):
            return False
        below, rbp = rbp, int.from_bytes(record[:8], "little")
    return False


# How much stack below rbp is checked for return addresses a frame-pointer step taken
# on evidence would skip.
MAX_SKIPPED_WORDS = 512


def skips_return_address(ctx: UnwindContext, rbp: int) -> bool:
    """True when a word between sp and rbp is a return address (or more stack than is
    checked lies there): rbp may then be a caller's, and the step would skip a frame."""
    count = (rbp - ctx.sp) // 8
    if count > MAX_SKIPPED_WORDS:
        return True
    return any(ctx.is_return_address(value) for _, value in ctx.stack_words(count))


def unwind_chained_frame_pointer(ctx: UnwindContext) -> Optional[Unwound]:
    """The frame-pointer rule for code whose start does not show it keeps one (V8's
    builtins build their frame after other pushes): taken only on evidence, a frame
    record at rbp whose chain keeps validating above it, and no return address between
    sp and rbp that the step would skip."""
    result = unwind_frame_pointer(ctx)
    if result is None or result.ends_walk or ctx.fp is None:  # (a result had an fp)
        return None
    if not chain_holds(ctx, result.saved[ctx.arch.fp]) or skips_return_address(ctx, ctx.fp):
        return None
    return result
