"""What every unwind strategy gets: one frame's pc and sp, memory, regions, registers."""

from __future__ import annotations

import struct
from typing import Callable, Dict, Iterator, Optional, Tuple

from ..arch import X86_64, Architecture
from ..model import CodeKind, Region
from ..records import field, record
from ..regions import RegionMap
from ..target import Memory, MemoryReadError, RegisterReader

MAX_FRAME_SIZE = 16 << 20  # a caller's sp further than this above sp is not believed


def follows_call(memory, regions, address: int, arch: Architecture = X86_64) -> bool:
    """True if ``address`` is in executable memory right after a call instruction."""
    if address < 16 or address % arch.instruction_alignment \
            or not regions.is_executable(address - 1):
        return False
    window = arch.call_window
    try:
        before = memory.read(address - window, window)
    except MemoryReadError:
        return False
    return arch.call_before(before)


@record
class UnwindContext:
    pc: int
    sp: int
    memory: Memory
    regions: RegionMap
    read_register: RegisterReader
    innermost: bool = False  # frame 0 or interrupted by a signal: pc is exact
    # Start of the native function holding an address (from the debugger's symbols).
    native_function_start: Optional[Callable[[int], Optional[int]]] = None
    # The function holding the pc when it is not JIT code but code without CFI in a
    # mapped file, from that file's symbols (regions/nocfi.py).
    function: Optional[Region] = None
    arch: Architecture = X86_64
    # (symbol(),) once looked up: the strategies ask for it several times per frame.
    _symbol: Optional[tuple] = field(default=None, repr=False, compare=False)

    def __init__(self, pc: int, sp: int, memory: Memory, regions: RegionMap,
                 read_register: RegisterReader, innermost: bool = False,
                 native_function_start: Optional[Callable[[int], Optional[int]]] = None,
                 function: Optional[Region] = None, arch: Architecture = X86_64,
                 _symbol: Optional[tuple] = None):
        # Written out: the record's compiled one is ~0.1 ms of the first JIT frame's bt.
        self.pc = pc
        self.sp = sp
        self.memory = memory
        self.regions = regions
        self.read_register = read_register
        self.innermost = innermost
        self.native_function_start = native_function_start
        self.function = function
        self.arch = arch
        self._symbol = _symbol

    @property
    def lookup_pc(self) -> int:
        """The address to find this frame's function by: a caller's pc is a return
        address, which may already be past the end of its function."""
        return self.pc if self.innermost else self.pc - 1

    def function_start(self) -> Optional[int]:
        """Start of this frame's function when a perf map or runtime says so."""
        symbol = self.symbol()
        return symbol.start if symbol is not None else None

    def symbol(self) -> Optional[Region]:
        """The named entry (perf map, runtime) holding this frame's pc, or the function
        symbol of code without CFI."""
        if self.function is not None:
            return self.function
        symbol = self._symbol
        if symbol is None:
            symbol = self._symbol = (self.regions.symbol_at(self.lookup_pc),)
        return symbol[0]

    def region(self) -> Optional[Region]:
        return self.regions.jit_region_at(self.lookup_pc)

    def is_return_address(self, address: int) -> bool:
        """True if ``address`` is in executable memory right after a call (once per
        address and stop: a JIT stack repeats a few return addresses)."""
        address = self.arch.code_address(address)
        key = ("return-address", address)
        known = self.regions.memo.get(key)
        if known is None:
            known = self.regions.memo[key] = self._is_return_address(address)
        return known

    def _is_return_address(self, address: int) -> bool:
        return follows_call(self.memory, self.regions, address, self.arch)

    def is_stack_address(self, address: int) -> bool:
        """True if ``address`` lies in the mapping that holds this frame's sp."""
        mapping = self.regions.mapping_at(self.sp)
        if mapping is None:  # no mapping list: accept what is near enough
            return self.sp <= address < self.sp + MAX_FRAME_SIZE
        return address in mapping

    def stack_words(self, count: int) -> Iterator[Tuple[int, int]]:
        """(address, value) of up to ``count`` words from sp upwards, stopping at the end
        of the stack mapping or of readable memory."""
        mapping = self.regions.mapping_at(self.sp)
        end = self.sp + count * 8
        if mapping is not None:
            end = min(end, mapping.end)
        data = self.memory.try_read(self.sp, end - self.sp) if end > self.sp else None
        if data is None:  # no mapping list, or a hole: what the first page gives
            data = self.memory.try_read(self.sp, min(end - self.sp, 512)) or b""
        values = struct.unpack_from(f"<{len(data) // 8}Q", data)  # at once: ~3x faster
        return zip(range(self.sp, self.sp + 8 * len(values), 8), values)

    def plausible_caller_sp(self, caller_sp: int) -> bool:
        """Above this frame's sp and near it; the same sp only for the interrupted frame
        of a leaf that keeps its return address in the link register (aarch64): it
        took no stack, and no other frame can be such a leaf."""
        if caller_sp == self.sp:
            return self.innermost and self.arch.link_register is not None
        return self.sp < caller_sp <= self.sp + MAX_FRAME_SIZE and caller_sp % 8 == 0

    def passed_through(self, names) -> Dict[str, int]:
        """The values ``names`` have in this frame, for registers the caller finds as
        this frame leaves them (callee-saved registers of code that follows the C
        calling convention).  Unknown registers are left out."""
        values = {}
        for name in names:
            value = self.register(name)
            if value is not None:
                values[name] = value
        return values

    def in_trace(self) -> bool:
        """True for frameless code entered through a shim (CPython's JIT traces): it
        keeps no callee-saved register, so none may be passed through."""
        symbol = self.symbol()
        return symbol is not None and symbol.kind == CodeKind.TRACE

    def enters_trace(self) -> bool:
        """True for a CPython JIT entry shim: its caller is the eval loop that entered
        the trace (see ``trace_entry``)."""
        symbol = self.symbol()
        return symbol is not None and symbol.kind == CodeKind.SHIM

    def register(self, name: str) -> Optional[int]:
        """The register's value in the frame being unwound, None when the debugger does
        not know it (RegisterReader's contract: the adapter keeps its errors)."""
        return self.read_register(name)

    def function_start_of(self, address: int) -> Optional[int]:
        """Start of the function holding ``address``: perf map/runtime, else symbols."""
        symbol = self.regions.symbol_at(address)
        if symbol is not None:
            return symbol.start
        if self.native_function_start is None or self.regions.jit_region_at(address):
            return None
        return self.native_function_start(address)  # Process.function_start: None, no error

    @property
    def fp(self) -> Optional[int]:
        """This frame's frame-pointer register (rbp, x29), None when unknown."""
        return self.register(self.arch.fp)

    def broken_rbp_reason(self, saved_rbp: int, slot: int, caller_pc: int) -> str:
        """Why the caller's frame pointer cannot be right, or "" when it may be.

        A saved frame pointer off the stack is normal when the caller uses that register
        as a plain one; it is a broken chain when the caller keeps a frame pointer in
        it."""
        if saved_rbp == 0 or self.is_stack_address(saved_rbp):
            return ""
        start = self.function_start_of(caller_pc - 1)
        if self.arch.frame_pointer_setup_at(self.memory, start) is None:
            return ""
        fp = self.arch.fp
        return (f"frame pointer chain broken: saved {fp} {saved_rbp:#x} at {slot:#x} is not "
                f"on the stack, and the caller keeps its frame pointer in {fp}")
