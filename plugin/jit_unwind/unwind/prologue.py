"""Unwind a frame by decoding its function's code from its first byte to the pc.

Used for functions whose start a perf map or runtime tells us (``prologue``), and for
trampolines and shims found by searching backwards for a function start
(``prologue-search``): CPython's perf trampolines, entry trampolines of other JITs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

from ..model import CodeKind, Region, UnwindMethod, Unwound
from ..target import MemoryReadError
from .caller_frame import caller_frame_pointer
from .context import UnwindContext
from ..arch.x86_64_decoder import PrologueState

if TYPE_CHECKING:
    from typing import TypeGuard

MAX_PROLOGUE = 4096   # bytes decoded from a known function start
SEARCH_WINDOW = 128   # bytes searched backwards for an unknown start


def _known_start(symbol: Optional[Region]) -> TypeGuard[Region]:
    """True when ``symbol`` (perf map, runtime) names where a decodable function starts."""
    return symbol is not None and symbol.kind != CodeKind.TRACE


def decode_from(ctx: UnwindContext, start: int, pc: int) -> Optional[PrologueState]:
    """Decode the function starting at ``start`` up to ``pc``; None if it cannot be."""
    if not 0 <= pc - start <= MAX_PROLOGUE:
        return None
    try:
        # At the first instruction nothing ran; GDB 18 refuses a read of 0 bytes.
        code = ctx.memory.read(start, pc - start) if pc > start else b""
        return ctx.arch.decode_prologue(code, start, pc)
    except (MemoryReadError, ctx.arch.decode_error):
        return None


def decoded_from(ctx: UnwindContext, start: int, pc: int) -> Optional[PrologueState]:
    """:func:`decode_from`, remembered per start and pc for this stop (a recursion
    through JIT code returns to the same few addresses thousands of times)."""
    key = ("decoded", start, pc)
    memo = ctx.regions.memo
    if key not in memo:
        memo[key] = decode_from(ctx, start, pc)
    return memo[key]


def known_start_applies(ctx: UnwindContext) -> bool:
    """Whether :func:`unwind_known_start` can answer at this frame's pc at all (per
    pc: a named start whose code decodes up to the pc)."""
    symbol = ctx.symbol()
    return _known_start(symbol) and decoded_from(ctx, symbol.start, ctx.pc) is not None


def unwind_known_start(ctx: UnwindContext) -> Optional[Unwound]:
    symbol = ctx.symbol()
    if not _known_start(symbol):
        return None
    state = decoded_from(ctx, symbol.start, ctx.pc)
    if state is None:
        return None
    return unwind_with_prologue(ctx, state, symbol.start, UnwindMethod.PROLOGUE)


def find_function_start(ctx: UnwindContext, pc: int) -> Optional[Tuple[int, PrologueState]]:
    """:func:`search_function_start`, remembered per pc for this stop."""
    key = ("named", "function-start", pc)
    if key not in ctx.regions.memo:
        ctx.regions.memo[key] = search_function_start(ctx, pc)
    return ctx.regions.memo[key]


def search_function_start(ctx: UnwindContext, pc: int) -> Optional[Tuple[int, PrologueState]]:
    """Search backwards from ``pc`` for a function start whose straight-line decode
    reaches ``pc`` exactly.  Only anchored starts count (an ``endbr64``, the start of the
    region, or right after a ``ret``/``int3``); the furthest such start wins, since a
    shorter decode could begin inside the real prologue.  A start that a perf map or a
    runtime names is used as it is (the anchors and ends are the architecture's:
    ``endbr64``, ``ret``/``int3`` on x86-64)."""
    symbol = ctx.regions.symbol_at(pc - 1)
    if _known_start(symbol):
        state = decode_from(ctx, symbol.start, pc)
        return (symbol.start, state) if state is not None else None
    region = ctx.regions.jit_region_at(pc - 1)
    low = max(pc - SEARCH_WINDOW, region.start if region is not None else pc - SEARCH_WINDOW)
    try:
        window = ctx.memory.read(low, pc - low)
    except MemoryReadError:
        return None
    arch = ctx.arch
    anchored = arch.anchored_starts(window, low)
    if region is not None and low == region.start:
        anchored.add(0)
    best = None
    for offset in sorted(anchored, reverse=True):
        if offset >= len(window):
            continue
        start = low + offset
        try:
            state = arch.decode_prologue(window[offset:], start, pc)
        except arch.decode_error:
            continue
        best = (start, state)
    return best


def _searched_start(ctx: UnwindContext) -> Optional[Tuple[int, PrologueState]]:
    if _known_start(ctx.symbol()):
        return None  # the "prologue" strategy already decoded from the known start
    found = find_function_start(ctx, ctx.pc)
    if found is None:
        return None
    state = found[1]
    if state.depth == 0 and not state.calls and not _leaf_at_stop(ctx, state):
        return None  # nothing decoded proves anything about this frame
    return found


def _leaf_at_stop(ctx: UnwindContext, state: PrologueState) -> bool:
    """True for code the stop interrupted that has not touched its link register
    (aarch64's x30): the decode proves the return address is still there (checked
    against the register's value in :func:`_return_address`)."""
    link = ctx.arch.link_register
    return (link is not None and ctx.innermost and link not in state.saved
            and link not in state.clobbered)


def prologue_search_applies(ctx: UnwindContext) -> bool:
    """Whether :func:`unwind_prologue_search` can answer at this frame's pc at all."""
    return _searched_start(ctx) is not None


def unwind_prologue_search(ctx: UnwindContext) -> Optional[Unwound]:
    found = _searched_start(ctx)
    if found is None:
        return None
    start, state = found
    return unwind_with_prologue(ctx, state, start, UnwindMethod.PROLOGUE_SEARCH)


def unwind_with_prologue(ctx: UnwindContext, state: PrologueState, start: int,
                         method: UnwindMethod) -> Optional[Unwound]:
    """Caller registers from a decoded prologue: the return address at the entry sp
    (x86-64), or where the code saved the link register, or still in it (aarch64)."""
    arch = ctx.arch
    entry_sp = ctx.sp + state.depth
    link = arch.link_register
    saved_slots = {name: offset for name, offset in state.saved.items() if name != link}
    words = _read_words(ctx, entry_sp, saved_slots,
                        state.saved.get(link, 0) if link is not None else 0)
    caller_pc = _return_address(ctx, state, words, start)
    caller_sp = arch.caller_sp_at_entry(entry_sp)
    if caller_pc is None or not ctx.plausible_caller_sp(caller_sp):
        return None
    if not ctx.regions.is_executable(caller_pc):
        return None
    saved = {}
    for name, offset in saved_slots.items():
        value = words.get(offset)
        if value is not None:
            saved[name] = value
    fp = arch.fp
    if fp in saved:
        reason = ctx.broken_rbp_reason(saved[fp], entry_sp + state.saved[fp], caller_pc)
        if reason:
            return Unwound(method=method, frame_start=start, cfa=caller_sp, stop_reason=reason)
    # Callee-saved registers this code neither saved nor wrote still hold the caller's
    # values (the C calling convention these functions are entered with).
    for name in arch.callee_saved:
        if name not in saved and name not in state.clobbered:
            value = ctx.register(name)
            if value is not None:
                saved[name] = value
    if fp not in saved and fp not in state.clobbered:
        # Neither saved here nor known in this frame: the code this frame called kept
        # nothing (a JIT trace).  The caller's own prologue tells where its rbp was.
        rbp = caller_frame_pointer(ctx, caller_pc, caller_sp)
        if rbp is not None:
            saved[fp] = rbp
    return Unwound(method=method, caller_pc=caller_pc, caller_sp=caller_sp, cfa=caller_sp,
                   frame_start=start, saved=saved)


def _return_address(ctx: UnwindContext, state: PrologueState, words: dict,
                    start: int) -> Optional[int]:
    """The return address: pushed at the entry sp (x86-64); saved from the link
    register by the decoded code, or still in it when the code neither saved nor
    overwrote it and this is the frame the stop interrupted (aarch64).  A link register
    is believed only when it holds a return address outside the decoded code (a call
    made by this very function, from before a start found inside it, left it there
    otherwise)."""
    link = ctx.arch.link_register
    if link is None:
        return words.get(0)
    if link in state.saved:
        value = words.get(state.saved[link])
        return ctx.arch.code_address(value) if value is not None else None
    if not ctx.innermost or link in state.clobbered or state.calls:
        return None  # a call since the entry replaced it
    value = ctx.register(link)
    if value is None:
        return None
    value = ctx.arch.code_address(value)
    if start <= value <= ctx.pc or not ctx.is_return_address(value):
        return None
    return value


def _read_words(ctx: UnwindContext, entry_sp: int, saved, return_slot: int = 0) -> dict:
    """offset -> the word at ``entry_sp + offset``, for the return address's slot
    (``return_slot``; offset 0, where a call pushes it) and the slots in ``saved``; one
    read of the whole frame where it is readable, else word by word (an unreadable word
    is left out)."""
    offsets = [return_slot, *saved.values()]
    low, high = min(offsets), max(offsets) + 8
    block = ctx.memory.try_read(entry_sp + low, high - low) if high - low <= 4096 else None
    if block is not None:
        return {offset: int.from_bytes(block[offset - low:offset - low + 8], "little")
                for offset in offsets}
    words = {}
    for offset in offsets:
        value = ctx.memory.try_read_u64(entry_sp + offset)
        if value is not None:
            words[offset] = value
    return words
