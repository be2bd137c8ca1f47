"""Unwind a JIT frame that keeps a frame pointer: [rbp] = caller's rbp, [rbp+8] = return."""

from typing import Optional

from ..model import UnwindMethod, Unwound
from .context import UnwindContext

PASSED_THROUGH = ("rbx", "r12", "r13", "r14", "r15")


def unwind_frame_pointer(ctx: UnwindContext) -> Optional[Unwound]:
    rbp = ctx.register("rbp")
    if rbp is None or rbp % 8 or rbp < ctx.sp or not ctx.is_stack_address(rbp):
        return None
    record = ctx.memory.try_read(rbp, 16)  # saved rbp and return address: one read
    caller_sp = rbp + 16
    if record is None or not ctx.plausible_caller_sp(caller_sp):
        return None
    saved_rbp = int.from_bytes(record[:8], "little")
    caller_pc = int.from_bytes(record[8:], "little")
    if not ctx.is_return_address(caller_pc):
        return None
    reason = ctx.broken_rbp_reason(saved_rbp, rbp, caller_pc)
    if reason:
        return Unwound(method=UnwindMethod.FRAME_POINTER, cfa=caller_sp,
                       frame_start=ctx.function_start(), stop_reason=reason)
    saved = {"rbp": saved_rbp, **ctx.passed_through(PASSED_THROUGH)}
    return Unwound(method=UnwindMethod.FRAME_POINTER, caller_pc=caller_pc, caller_sp=caller_sp,
                   cfa=caller_sp, frame_start=ctx.function_start(), saved=saved)
