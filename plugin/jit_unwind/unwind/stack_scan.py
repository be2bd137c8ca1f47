"""Last resort: the first word above sp that looks like a return address.  A guess."""

from typing import Optional

from ..model import UnwindMethod, Unwound
from .context import UnwindContext
from .x86_64 import CALLEE_SAVED

SCAN_WORDS = 2048


def unwind_stack_scan(ctx: UnwindContext) -> Optional[Unwound]:
    for slot, value in ctx.stack_words(SCAN_WORDS):
        if value != ctx.pc and ctx.is_return_address(value):
            caller_sp = slot + 8
            # Registers as this frame has them: right for code that keeps the C calling
            # convention, and without rbp GDB could not unwind a caller whose CFA is
            # rbp-based at all.
            saved = {} if ctx.in_trace() else ctx.passed_through(CALLEE_SAVED)
            return Unwound(method=UnwindMethod.STACK_SCAN, caller_pc=value, caller_sp=caller_sp,
                           cfa=caller_sp, frame_start=ctx.function_start(), guess=True,
                           saved=saved)
    return None
