"""Last resort: the first word above sp that looks like a return address.  A guess."""

from __future__ import annotations

from typing import Dict, Optional

from ..model import UnwindMethod, Unwound
from .context import UnwindContext
from .frame_pointer import chain_holds, planted_return

SCAN_WORDS = 2048


def unwind_stack_scan(ctx: UnwindContext) -> Optional[Unwound]:
    arch = ctx.arch
    for slot, value in ctx.stack_words(SCAN_WORDS):
        value = arch.code_address(value)
        if value != ctx.pc and (ctx.is_return_address(value)
                                and not _stale_in_file_code(ctx, value, slot + 8)
                                or _planted_record(ctx, slot, value)):
            # Where the callee saved the return address itself (aarch64), its caller's
            # sp is above the slot, 16-byte aligned: the nearest such is the guess.
            caller_sp = slot + 8 if arch.return_address_pushed else (slot + 8 + 15) & ~15
            if ctx.in_trace():  # frameless code entered through a shim keeps none
                saved: Dict[str, int] = {}
            else:
                # Registers as this frame has them: right for code that keeps the C
                # calling convention, and without rbp GDB could not unwind a caller
                # whose CFA is rbp-based at all.
                saved = ctx.passed_through(ctx.arch.callee_saved)
                pushed = _rbp_pushed_below(ctx, slot, saved.get(ctx.arch.fp))
                if pushed is not None:
                    saved[ctx.arch.fp] = pushed
            return Unwound(method=UnwindMethod.STACK_SCAN, caller_pc=value, caller_sp=caller_sp,
                           cfa=caller_sp, frame_start=ctx.function_start(), guess=True,
                           saved=saved)
    return None


def _planted_record(ctx: UnwindContext, slot: int, value: int) -> bool:
    """True when ``value`` at ``slot`` is a return address a runtime planted with no call
    before it (HotSpot's interpreter return entries, pushed before it jumps to the
    callee), on the frame-pointer rule's evidence: the word below it is a saved rbp
    above the slot whose chain keeps validating (unwind/frame_pointer.py)."""
    if not ctx.regions.is_executable(value):
        return False
    below = ctx.memory.try_read(slot - 8, 8)
    if below is None:
        return False
    pushed = int.from_bytes(below, "little")
    return pushed > slot and planted_return(ctx, value, pushed)


def _rbp_pushed_below(ctx: UnwindContext, slot: int, rbp: Optional[int]) -> Optional[int]:
    """The caller's rbp from the word right below its return slot, where code entered by
    that call pushes it first (HotSpot's compiled code and interpreter, SpiderMonkey's
    frames): taken only when this frame's rbp cannot be the caller's frame pointer (it
    lies below the caller's sp) and the word is one, a stack address above the slot
    whose next word is a return address.  Without it, a caller unwound by its CFA =
    rbp + 16 ends the walk ("previous frame inner to this frame")."""
    caller_sp = slot + 8
    if rbp is not None and rbp >= caller_sp and ctx.is_stack_address(rbp):
        return None
    below = ctx.memory.try_read(slot - 8, 8)
    if below is None:
        return None
    pushed = int.from_bytes(below, "little")
    if pushed % 8 or pushed < caller_sp or not ctx.is_stack_address(pushed):
        return None
    return pushed if chain_holds(ctx, pushed) else None


def _stale_in_file_code(ctx: UnwindContext, value: int, caller_sp: int) -> bool:
    """True when ``value``, a return address into a file's code at ``caller_sp``, cannot
    be a live frame's: that code's CFI finds its own return address at a fixed place
    above ``caller_sp`` (a CFA from rsp), and that word is no return address.  A stale
    return address left in a JIT frame's slots (SpiderMonkey's recursion) is passed over
    so; a frame the CFI cannot check (no CFI, a CFA from rbp) is kept as before."""
    key = ("stale-return-address", value, caller_sp)
    known = ctx.regions.memo.get(key)
    if known is None:
        known = ctx.regions.memo[key] = _stale(ctx, value, caller_sp)
    return known


def _stale(ctx: UnwindContext, value: int, caller_sp: int) -> bool:
    mapping = ctx.regions.mapping_at(value - 1)
    if mapping is None or mapping.anonymous or ctx.regions.jit_region_at(value - 1):
        return False
    # The file's CFI reader is imported at the first such address, not with the scan:
    # a scan that meets only JIT code does without it (each module costs the first bt).
    from .cfi import OUTERMOST, cfi_rsp_caller
    caller = cfi_rsp_caller(ctx.memory, ctx.regions.mappings.items, mapping.path, value,
                            caller_sp, ctx.arch)
    if caller is None or caller is OUTERMOST:
        return False
    rip = caller[ctx.arch.pc]
    if not (ctx.plausible_caller_sp(caller[ctx.arch.sp]) and caller[ctx.arch.sp] > caller_sp) \
            or not ctx.regions.is_executable(rip - 1):
        return True
    # Code the memory lacks (a core without the file's text) proves nothing.
    return ctx.memory.try_read(rip - 8, 8) is not None and not ctx.is_return_address(rip)
