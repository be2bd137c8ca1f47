"""Recover a caller's frame pointer from the caller's own prologue.

An entry shim that does not save rbp, and calls code that keeps no callee-saved
register (CPython 3.14's JIT: the shim pushes rbx and r12-r15, then calls a
``preserve_none`` trace that uses rbp as a general register), leaves the caller's rbp
nowhere but in the shape of the caller's frame.  A caller that keeps a frame pointer
(``push rbp; mov rbp, rsp; push ...; sub rsp, N``: CPython's eval loop built by gcc)
and calls with a fixed frame has, at the call, ``rbp = sp + depth - fp_depth``, where
its prologue decoded from the function's first byte gives both depths.  The result is
checked: the slot the prologue puts the caller's own return address in must hold one.
"""

from __future__ import annotations

from typing import Optional

from .context import UnwindContext

SETUP_BYTES = 64  # enough for endbr64, push rbp, mov rbp,rsp, six pushes and a sub


def caller_frame_pointer(ctx: UnwindContext, caller_pc: int, caller_sp: int) -> Optional[int]:
    """The rbp the native function returned to at ``caller_pc`` had when it made the
    call (its sp then was ``caller_sp``), or None when that cannot be known for sure."""
    key = ("caller-frame-setup", caller_pc)
    if key not in ctx.regions.memo:
        ctx.regions.memo[key] = _frame_setup(ctx, caller_pc)
    setup = ctx.regions.memo[key]
    if setup is None:
        return None
    depth, frame_pointer_depth = setup
    entry_sp = caller_sp + depth
    return_address = ctx.memory.try_read_u64(entry_sp)
    if return_address is None or not ctx.is_return_address(return_address):
        return None
    return entry_sp - frame_pointer_depth


def _frame_setup(ctx: UnwindContext, caller_pc: int):
    """(stack depth after the prologue, depth at ``mov rbp, rsp``) of the function
    holding ``caller_pc``, None unless it starts by setting up a frame pointer."""
    start = ctx.function_start_of(caller_pc - 1)
    if start is None:
        return None
    code = ctx.memory.try_read(start, SETUP_BYTES)
    if code is None:
        return None
    state = ctx.arch.decode_frame_setup(code)
    if state is None or state.frame_pointer_depth is None:
        return None
    return state.depth, state.frame_pointer_depth
