"""Unwind JIT code by the ``.eh_frame`` its JIT wrote into a perf jitdump.

The most certain strategy: the rules come from the code generator itself.  The
``.eh_frame`` bytes of an unwinding record are read (``cfi_rows``) as if placed where
the writer laid them out, right after the code (their pc-relative pointers count from
there), and the row for the pc is evaluated by :func:`cfi.caller_registers`.  Records
come from the region map (``unwind_records``), already checked against memory.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import TYPE_CHECKING, List, Optional, Tuple

from ..model import UnwindMethod, Unwound
from .cfi import OUTERMOST, caller_registers
from .cfi_rows import EhFrame, UnsupportedCfi
from .context import UnwindContext

MAX_TABLES = 4096
if TYPE_CHECKING:  # not at run time: typing's Tuple[...] is ~0.05 ms of the first bt
    Fde = Tuple[int, int, List[dict]]  # start, end, every row of its table
# Kept by (eh_frame bytes, address): every CPython trampoline has the same bytes at its
# own address.
@lru_cache(maxsize=MAX_TABLES)
def fde_entries(eh_frame: bytes, address: int) -> List[Fde]:
    """The FDEs of ``eh_frame`` placed at ``address`` with their rows; [] when they
    cannot be read (an FDE whose instructions cannot be decoded is left out)."""
    return read_fdes(eh_frame, address)


def read_fdes(eh_frame: bytes, address: int) -> List[Fde]:
    try:
        table = EhFrame(eh_frame, address)
        entries = [(start, end, table.rows(start, offset))
                   for start, end, offset in table.fdes()]
    # Bytes that are no .eh_frame: no rules (cfi_rows' errors for what it cannot read).
    except (UnsupportedCfi, IndexError, ValueError, struct.error, KeyError):
        return []
    return [(start, end, rows) for start, end, rows in entries if rows is not None]


def row_at(eh_frame: bytes, address: int, pc: int) -> Optional[dict]:
    """The CFI row in force at ``pc``, None when no FDE covers it."""
    for start, end, rows in fde_entries(eh_frame, address):
        if start <= pc < end:
            found = None
            for candidate in rows:
                if candidate["pc"] > pc:
                    break
                found = candidate
            return found
    return None


def _record_and_row(ctx: UnwindContext):
    record = ctx.regions.unwind_record_at(ctx.lookup_pc)
    if record is None or record.unwinding is None:
        return None, None
    return record, row_at(record.unwinding.eh_frame, record.eh_frame_address, ctx.lookup_pc)


def jitdump_cfi_applies(ctx: UnwindContext) -> bool:
    """Whether a jitdump unwind table has a row for this frame's pc (per pc)."""
    return _record_and_row(ctx)[1] is not None


def unwind_jitdump_cfi(ctx: UnwindContext) -> Optional[Unwound]:
    record, row = _record_and_row(ctx)
    if row is None:
        return None
    arch = ctx.arch
    registers = {arch.sp: ctx.sp, arch.pc: ctx.pc}
    names = arch.callee_saved if arch.link_register is None \
        else (*arch.callee_saved, arch.link_register)
    for name in names:
        value = ctx.register(name)
        if value is not None:
            registers[name] = value
    caller = caller_registers(ctx.memory, row, registers, arch)
    if caller is None:
        return None
    if caller is OUTERMOST or not caller:
        return Unwound(method=UnwindMethod.JITDUMP_CFI, frame_start=record.start,
                       stop_reason="the JIT's unwind table says this frame has no caller")
    caller_pc, caller_sp = caller.pop(arch.pc), caller.pop(arch.sp)
    if not ctx.regions.is_executable(caller_pc):
        return None
    return Unwound(method=UnwindMethod.JITDUMP_CFI, caller_pc=caller_pc, caller_sp=caller_sp,
                   cfa=caller_sp, frame_start=record.start, saved=caller)
