"""Unwind JIT code by the ``.eh_frame`` its JIT wrote into a perf jitdump.

The most certain strategy: the rules come from the code generator itself.  The
``.eh_frame`` bytes of an unwinding record are parsed (pyelftools) as if placed where
the writer laid them out, right after the code (their pc-relative pointers count from
there), and the row for the pc is evaluated by :func:`cfi.caller_registers`.  Records
come from the region map (``unwind_records``), already checked against memory.
"""

import io
from typing import Dict, List, Optional, Tuple

from ..model import UnwindMethod, Unwound
from .cfi import OUTERMOST, caller_registers
from .context import UnwindContext

MAX_TABLES = 4096
# (eh_frame bytes, address) -> [(start, end, FDE)] sorted; every CPython trampoline has
# the same bytes at its own address.
_tables: Dict[Tuple[bytes, int], List[Tuple[int, int, object]]] = {}


def fde_entries(eh_frame: bytes, address: int) -> List[Tuple[int, int, object]]:
    """The FDEs of ``eh_frame`` placed at ``address``; [] when they cannot be read."""
    key = (eh_frame, address)
    if key not in _tables:
        if len(_tables) >= MAX_TABLES:
            _tables.clear()
        _tables[key] = read_fdes(eh_frame, address)
    return _tables[key]


def read_fdes(eh_frame: bytes, address: int) -> List[Tuple[int, int, object]]:
    try:
        from elftools.dwarf.callframe import CallFrameInfo
        from elftools.dwarf.structs import DWARFStructs
        structs = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8)
        info = CallFrameInfo(io.BytesIO(eh_frame), len(eh_frame), address, structs,
                             for_eh_frame=True)
        entries = []
        for entry in info.get_entries():
            header = getattr(entry, "header", None)
            if header is None or "initial_location" not in header:
                continue  # a CIE or the terminator
            start = header["initial_location"]
            entries.append((start, start + header["address_range"], entry))
        return sorted(entries, key=lambda item: item[0])
    except Exception:  # no pyelftools, or bytes that are no .eh_frame: no rules
        return []


def row_at(eh_frame: bytes, address: int, pc: int):
    """The CFI row in force at ``pc``, None when no FDE covers it."""
    for start, end, entry in fde_entries(eh_frame, address):
        if start <= pc < end:
            row = None
            try:
                table = entry.get_decoded().table
            except Exception:
                return None
            for candidate in table:
                if candidate["pc"] <= pc:
                    row = candidate
                else:
                    break
            return row
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
