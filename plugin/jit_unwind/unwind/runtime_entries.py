"""Runtime entry records: where a JIT runtime's entry code keeps its native caller's
registers, described as data, so the walk resumes at the entry exactly (the JIT code
it called clobbers every callee-saved register; passing them through would hand the
native caller wrong values).

An entry frame is the frame whose pc is the return address into the entry code (after
its call of the JIT code), recognised in one of three ways: the return address kept in
a variable found through the runtime's symbols (HotSpot), the entry code's function
symbol (V8's builtins, named in the executable's symbols or a perf map), or the entry
code's bytes at the return address (SpiderMonkey generates its trampoline at run time,
with no symbol).  The entry frame's base (its rbp as the entry code set it up) is the
rbp register, or, for an entry whose callees need not keep rbp, computed from the
frame's sp and a size the entry code pushed.  The caller's rbp and pc are the frame
record at that base, each saved register at a fixed offset below it.

To add a runtime, add an ``EntryFrame``: how its frame is recognised, and the
registers' offsets from its base (from the runtime's source, checked against the
disassembly of the runtime on the machine: docs/runtimes.md).
"""

from __future__ import annotations

from typing import Optional, Tuple

from ..elf.lookup import symbol_address
from ..model import UnwindMethod, Unwound
from .context import UnwindContext
from ..records import record


@record(frozen=True)
class SizedBase:
    """The entry frame's base computed from its sp: ``sp + fixed + ([sp + word] >>
    shift)``, for entry code that pushed the size of what it pushed since (the words it
    pops before restoring the caller's registers)."""
    word: int
    shift: int
    fixed: int

    def __init__(self, word: int, shift: int, fixed: int):
        self.__dict__.update(word=word, shift=shift, fixed=fixed)  # see EntryFrame's


@record(frozen=True)
class EntryFrame:
    runtime: str
    saved: Tuple[Tuple[str, int], ...]  # register, offset from the entry frame's base
    # Recognised by one of:
    library: str = ""  # the file name of the runtime's library, where the symbol is
    return_address_variable: str = ""  # symbol of a pointer to the return address
    functions: Tuple[str, ...] = ()  # names of the entry code (symbols, perf map)
    return_code: bytes = b""  # the entry code's bytes at the return address
    base: Optional[SizedBase] = None  # None: the frame's rbp is the base
    arch: str = "x86-64"  # the processor the runtime generated this entry code for

    def __init__(self, runtime: str, saved: Tuple[Tuple[str, int], ...], library: str = "",
                 return_address_variable: str = "", functions: Tuple[str, ...] = (),
                 return_code: bytes = b"", base: Optional[SizedBase] = None,
                 arch: str = "x86-64"):
        # Written out: the record's compiled one is ~0.1 ms of the first JIT frame's bt.
        self.__dict__.update(runtime=runtime, saved=saved, library=library,
                             return_address_variable=return_address_variable,
                             functions=functions, return_code=return_code, base=base,
                             arch=arch)


ENTRY_FRAMES = (
    # HotSpot (OpenJDK 17, x86-64 Linux): StubRoutines::call_stub, called by
    # JavaCalls::call_helper (stubGenerator_x86_64.cpp, generate_call_stub: rbx_off = -7
    # to r15_off = -11 words from rbp).
    EntryFrame("HotSpot call stub",
               (("rbx", -7 * 8), ("r12", -8 * 8), ("r13", -9 * 8), ("r14", -10 * 8),
                ("r15", -11 * 8)),
               library="libjvm.so",
               return_address_variable="_ZN12StubRoutines25_call_stub_return_addressE"),
    # V8 (node 20, x86-64): Builtins_JSEntry and its two variants, called by
    # v8::internal::(anonymous namespace)::Invoke (builtins-x64.cc,
    # Generate_JSEntryVariant: push rbp; mov rbp, rsp; push the frame type marker;
    # a slot for the context; push r12, r13, r14, r15, rbx).  Named Builtins_* in
    # node's symbols, Builtin:* in the perf map of --perf-basic-prof.
    EntryFrame("V8 JSEntry",
               (("r12", -3 * 8), ("r13", -4 * 8), ("r14", -5 * 8), ("r15", -6 * 8),
                ("rbx", -7 * 8)),
               functions=tuple(prefix + name for name in
                               ("JSEntry", "JSConstructEntry", "JSRunMicrotasksEntry")
                               for prefix in ("Builtins_", "Builtin:"))),
    # SpiderMonkey (mozjs 102, x86-64): the EnterJIT trampoline, called by js::jit's
    # EnterJit (Trampoline-x64.cpp, generateEnterJIT: push rbp; mov rbp, rsp; push rbx,
    # r12, r13, r14, r15; push vp; ...; push the frame descriptor; call the JIT code).
    # Ion code keeps no frame pointer, so the base is computed from the descriptor
    # the return address finds at sp, as the code there pops it: pop r14 (descriptor);
    # shr r14, 8; pop r12; pop r12; add rsp, r14; pop r12 (vp); mov [r12], rcx;
    # pop r15, r14, r13, r12, rbx, rbp; ret.
    EntryFrame("SpiderMonkey EnterJIT",
               (("rbx", -1 * 8), ("r12", -2 * 8), ("r13", -3 * 8), ("r14", -4 * 8),
                ("r15", -5 * 8)),
               return_code=bytes.fromhex("415e" "49c1ee08" "415c" "415c" "4903e6" "415c"
                                         "49890c24" "415f" "415e" "415d" "415c" "5b" "5d"
                                         "c3"),
               base=SizedBase(word=0, shift=8, fixed=3 * 8 + 8 + 5 * 8)),
)


def _entry_returns(ctx: UnwindContext) -> Tuple[Tuple[int, EntryFrame], ...]:
    """(return address, entry) of each runtime present that keeps its return address in
    a variable, once per stop: the variables are set once the runtime has generated its
    entry code."""
    key = ("runtime-entry-returns",)
    known = ctx.regions.memo.get(key)
    if known is None:
        found = []
        for entry in ENTRY_FRAMES:
            if not entry.return_address_variable:
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


_NAMED = {name: entry for entry in ENTRY_FRAMES for name in entry.functions}
_LONGEST_CODE = max(len(entry.return_code) for entry in ENTRY_FRAMES)


def _entry_at(ctx: UnwindContext) -> Optional[EntryFrame]:
    """The entry whose frame this is, None for any other frame (per pc and stop)."""
    key = ("runtime-entry", ctx.pc, ctx.innermost)
    memo = ctx.regions.memo
    if key in memo:
        return memo[key]
    entry = next((e for address, e in _entry_returns(ctx) if address == ctx.pc), None)
    if entry is None and not ctx.innermost:  # in its prologue, the layout is not there
        symbol = ctx.symbol()
        named = _NAMED.get(symbol.name) if symbol is not None and symbol.name else None
        if named is not None and ctx.is_return_address(ctx.pc):
            entry = named
    if entry is None:
        code = ctx.memory.try_read(ctx.pc, _LONGEST_CODE)
        if code is None:  # near the end of the mapping: what is there
            code = ctx.memory.try_read(ctx.pc, 16)
        entry = next((e for e in ENTRY_FRAMES
                      if e.return_code and code and code.startswith(e.return_code)), None)
    memo[key] = entry
    return entry


def _base(ctx: UnwindContext, entry: EntryFrame) -> Optional[int]:
    if entry.base is None:
        return ctx.fp
    size = ctx.memory.try_read_u64(ctx.sp + entry.base.word)
    if size is None:
        return None
    return ctx.sp + entry.base.fixed + (size >> entry.base.shift)


def unwind_runtime_entry(ctx: UnwindContext) -> Optional[Unwound]:
    """The native caller of a runtime's entry frame, with the registers the entry code
    saved; None for any other frame."""
    entry = _entry_at(ctx)
    if entry is None or entry.arch != ctx.arch.name:
        return None
    base = _base(ctx, entry)
    if base is None or base % 8 or base < ctx.sp or not ctx.is_stack_address(base):
        return None
    low = min(offset for _name, offset in entry.saved)
    data = ctx.memory.try_read(base + low, 16 - low)
    if data is None:
        return None

    def word(offset: int) -> int:
        return int.from_bytes(data[offset - low:offset - low + 8], "little")

    caller_pc, caller_sp = word(8), base + 16
    if not ctx.is_return_address(caller_pc):
        return None
    saved = {ctx.arch.fp: word(0), **{name: word(offset) for name, offset in entry.saved}}
    return Unwound(method=UnwindMethod.ENTRY_RECORD, caller_pc=caller_pc,
                   caller_sp=caller_sp, cfa=caller_sp, frame_start=ctx.function_start(),
                   saved=saved)
