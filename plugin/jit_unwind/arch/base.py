"""The description of one processor the unwinder works on (see the package's doc)."""

from __future__ import annotations  # annotations unevaluated: less work at load

from ..records import record
from functools import cached_property
from typing import Callable, Dict, Optional, Set, Tuple

# The longest frame-pointer set-up read: aarch64's ``paciasp; stp x29, x30, [sp, #-n]!;
# mov x29, sp`` is 12 bytes, x86-64's ``endbr64; push rbp; mov rbp, rsp`` 8.
FRAME_SETUP_BYTES = 16


@record(frozen=True)
class Architecture:
    """``pc``/``sp``/``fp``: the names the debuggers give the program counter, stack
    pointer and frame pointer.  ``link_register``: where a call leaves the return
    address (aarch64's x30), None where the call pushes it (x86-64).  A frame record at
    fp holds the caller's fp and the return address, one word each.
    ``callee_saved``: the general registers a function returns as it found them,
    fp included (not the link register: every call overwrites it).
    ``dwarf_registers``: DWARF number -> name; ``return_address_column`` the CFI
    column of the return address.

    Decoding: ``call_before(bytes)`` tells whether the ``call_window`` bytes before a
    return address end with a call; ``code_address`` strips what is not address in a
    saved return address (pointer authentication); ``frame_pointer_setup(bytes)`` is the
    length of the frame-pointer set-up a function starts with (None when it starts
    otherwise); ``decode_prologue(code, start, stop)`` simulates a function's straight
    start up to ``stop`` (raises ``decode_error``), ``decode_frame_setup(code)`` its
    frame set-up alone; ``anchored_starts(window, address)`` gives the offsets in the
    bytes ``window`` (from ``address``) where a function may start, for a search
    backwards from a pc (after a function's end, at a landing-pad instruction).
    """

    name: str
    pc: str
    sp: str
    fp: str
    link_register: Optional[str]
    callee_saved: Tuple[str, ...]
    dwarf_registers: Dict[int, str]
    return_address_column: int
    call_window: int
    call_before: Callable[[bytes], bool]
    code_address: Callable[[int], int]
    frame_pointer_setup: Callable[[bytes], Optional[int]]
    decode_prologue: Callable
    decode_frame_setup: Callable
    decode_error: type[Exception]
    instruction_alignment: int
    anchored_starts: Callable[[bytes, int], Set[int]]
    debugger_names: Tuple[str, ...]
    elf_machine: int

    def __init__(self, name: str, pc: str, sp: str, fp: str, link_register: Optional[str],
                 callee_saved: Tuple[str, ...], dwarf_registers: Dict[int, str],
                 return_address_column: int, call_window: int,
                 call_before: Callable[[bytes], bool], code_address: Callable[[int], int],
                 frame_pointer_setup: Callable[[bytes], Optional[int]],
                 decode_prologue: Callable, decode_frame_setup: Callable,
                 decode_error: type[Exception], instruction_alignment: int,
                 anchored_starts: Callable[[bytes, int], Set[int]],
                 debugger_names: Tuple[str, ...], elf_machine: int):
        # Written out (records.py): compiled, it was ~0.2 ms of the plugin's load.
        self.__dict__.update(
            name=name, pc=pc, sp=sp, fp=fp, link_register=link_register,
            callee_saved=callee_saved, dwarf_registers=dwarf_registers,
            return_address_column=return_address_column, call_window=call_window,
            call_before=call_before, code_address=code_address,
            frame_pointer_setup=frame_pointer_setup, decode_prologue=decode_prologue,
            decode_frame_setup=decode_frame_setup, decode_error=decode_error,
            instruction_alignment=instruction_alignment, anchored_starts=anchored_starts,
            debugger_names=debugger_names, elf_machine=elf_machine)

    @cached_property  # asked at every frame the frame-pointer rule unwinds
    def passed_through(self) -> Tuple[str, ...]:
        """Callee-saved registers a frame hands its caller unchanged unless it saved
        them (the frame pointer has its own rule, the return address is no register
        a caller keeps)."""
        return tuple(name for name in self.callee_saved if name != self.fp)

    @cached_property
    def return_address_pushed(self) -> bool:
        """True where a call pushes the return address: the caller's sp is then one
        word above the callee's entry sp."""
        return self.link_register is None

    def frame_pointer_setup_at(self, memory, start: Optional[int]) -> Optional[int]:
        """:attr:`frame_pointer_setup` of the function at ``start`` in ``memory`` (None
        when unknown or unreadable): its first FRAME_SETUP_BYTES, or the 8 that hold
        x86-64's whole set-up where fewer are readable."""
        if start is None:
            return None
        code = memory.try_read(start, FRAME_SETUP_BYTES) or memory.try_read(start, 8)
        return self.frame_pointer_setup(code) if code is not None else None

    def caller_sp_at_entry(self, entry_sp: int) -> int:
        """The caller's sp, from the sp at the callee's first instruction."""
        return entry_sp + 8 if self.return_address_pushed else entry_sp

    def __repr__(self) -> str:
        return f"<Architecture {self.name}>"
