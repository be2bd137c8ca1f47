"""Last resort: the first word above sp that looks like a return address.  A guess."""

from typing import Optional

from ..model import Unwound
from ..target import MemoryReadError
from .context import UnwindContext

SCAN_WORDS = 2048


def unwind_stack_scan(ctx: UnwindContext) -> Optional[Unwound]:
    try:
        words = ctx.memory.read(ctx.sp, SCAN_WORDS * 8)
    except MemoryReadError:
        words = ctx.memory.try_read(ctx.sp, 512) or b""
    for index in range(len(words) // 8):
        value = int.from_bytes(words[index * 8:index * 8 + 8], "little")
        if value != ctx.pc and ctx.is_return_address(value):
            caller_sp = ctx.sp + index * 8 + 8
            return Unwound(method="stack-scan", caller_pc=value, caller_sp=caller_sp,
                           cfa=caller_sp, frame_start=ctx.function_start(), guess=True)
    return None
