"""Unwind a JIT trace back into the native function that called it and keeps rbp.

CPython 3.15 enters every trace through one C function of the interpreter,
``_PyJIT_Entry`` (``push rbp; mov rbp, rsp``, pushes of the callee-saved registers, then
``call`` the trace), and its traces keep that rbp.  The ``.eh_frame`` CPython registers
for its traces (GDB's JIT interface) says CFA = rbp + 16: the debugger returns from the
trace straight into the eval loop, skipping the entry function's frame, and gives the
eval loop the trace's callee-saved registers instead of those the entry function saved
(its ``tstate`` and ``frame`` are garbage).

Between sp and rbp lies the return slot of that call.  It is the word that follows a
call in a file's code (not JIT code) and whose function, decoded from its first byte,
has at that call exactly the frame pointer rbp holds now (``caller_frame_pointer``): an
exact answer, not a guess.  The caller is that function at its return address; the
debugger's own CFI of the function restores what it pushed.  Nothing else is passed
through: the trace keeps no callee-saved register but rbp.
"""

from __future__ import annotations

from typing import Optional

from ..model import UnwindMethod, Unwound
from .caller_frame import caller_frame_pointer
from .context import UnwindContext

MAX_SCAN_WORDS = 512  # a trace's own frame: spills of a few stencils


def unwind_entry_return(ctx: UnwindContext) -> Optional[Unwound]:
    rbp = ctx.fp
    if rbp is None or rbp % 8 or not ctx.sp < rbp <= ctx.sp + MAX_SCAN_WORDS * 8:
        return None
    for slot, value in ctx.stack_words((rbp - ctx.sp) // 8):
        if ctx.regions.jit_region_at(value - 1) is not None or not ctx.is_return_address(value):
            continue
        if caller_frame_pointer(ctx, value, slot + 8) == rbp:
            return Unwound(method=UnwindMethod.ENTRY_RETURN, caller_pc=value, caller_sp=slot + 8,
                           cfa=slot + 8, frame_start=ctx.function_start(),
                           saved={ctx.arch.fp: rbp})
    return None
