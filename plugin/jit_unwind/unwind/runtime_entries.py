"""Runtime entry records: where a JIT runtime's entry code keeps its native caller's
registers, described as data, so the walk resumes at the entry exactly (the Java code
it called clobbers every callee-saved register; passing them through would hand the
native caller wrong values).

An entry is recognised by its return address, which the runtime keeps in a variable
found through its symbols: a frame whose pc is that address is the entry frame, and
its frame pointer holds the layout below.  To add a runtime, add an ``EntryFrame``: the
runtime's library, the symbol of the variable there holding the return address into
the entry code, and where, relative to the entry frame's rbp, that code saved each
callee-saved register (from the runtime's source); the caller's rbp and pc are the
frame record at rbp.
"""

from dataclasses import dataclass
from typing import Optional, Tuple

from ..elf_lookup import symbol_address
from ..model import UnwindMethod, Unwound
from .context import UnwindContext


@dataclass(frozen=True)
class EntryFrame:
    runtime: str
    library: str  # the file name of the runtime's library, where the symbol is
    return_address_variable: str  # symbol of a pointer to the return address
    saved: Tuple[Tuple[str, int], ...]  # register, offset from the entry frame's rbp
    arch: str = "x86-64"  # the processor the runtime generated this entry code for


ENTRY_FRAMES = (
    # HotSpot (OpenJDK 17, x86-64 Linux): StubRoutines::call_stub, called by
    # JavaCalls::call_helper (stubGenerator_x86_64.cpp, generate_call_stub: rbx_off = -7
    # to r15_off = -11 words from rbp).
    EntryFrame("HotSpot call stub", "libjvm.so", "_ZN12StubRoutines25_call_stub_return_addressE",
               (("rbx", -7 * 8), ("r12", -8 * 8), ("r13", -9 * 8), ("r14", -10 * 8),
                ("r15", -11 * 8))),
)


def _entry_returns(ctx: UnwindContext) -> Tuple[Tuple[int, EntryFrame], ...]:
    """(return address, entry) of each runtime present, once per stop: the variables
    are set once the runtime has generated its entry code."""
    key = ("runtime-entry-returns",)
    known = ctx.regions.memo.get(key)
    if known is None:
        found = []
        for entry in ENTRY_FRAMES:
            if entry.arch != ctx.arch.name:
                continue
            mappings = [m for m in ctx.regions.mappings.items
                        if m.path.rsplit("/", 1)[-1] == entry.library]
            variable = symbol_address(mappings, entry.return_address_variable,
                                      full_tables=True) if mappings else None
            value = ctx.memory.try_read_u64(variable) if variable is not None else None
            if value:
                found.append((value, entry))
        known = ctx.regions.memo[key] = tuple(found)
    return known


def unwind_runtime_entry(ctx: UnwindContext) -> Optional[Unwound]:
    """The native caller of a runtime's entry frame, with the registers the entry code
    saved; None for any other frame."""
    entry = next((e for address, e in _entry_returns(ctx) if address == ctx.pc), None)
    rbp = ctx.fp
    if entry is None or rbp is None or rbp % 8 or not ctx.is_stack_address(rbp):
        return None
    low = min(offset for _name, offset in entry.saved)
    data = ctx.memory.try_read(rbp + low, 16 - low)
    if data is None:
        return None

    def word(offset: int) -> int:
        return int.from_bytes(data[offset - low:offset - low + 8], "little")

    caller_pc, caller_sp = word(8), rbp + 16
    if not ctx.is_return_address(caller_pc):
        return None
    saved = {ctx.arch.fp: word(0), **{name: word(offset) for name, offset in entry.saved}}
    return Unwound(method=UnwindMethod.ENTRY_RECORD, caller_pc=caller_pc,
                   caller_sp=caller_sp, cfa=caller_sp, frame_start=ctx.function_start(),
                   saved=saved)
