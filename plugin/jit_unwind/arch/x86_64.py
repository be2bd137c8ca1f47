"""x86-64: the return address is pushed by the call; rbp is the frame pointer."""

from __future__ import annotations  # annotations unevaluated: less work at load

from typing import Optional, Set

from . import x86_64_decoder as decoder
from .base import Architecture

ENDBR64 = b"\xf3\x0f\x1e\xfa"
# Bytes that end a function or pad between functions (ret, int3): a start may follow.
FUNCTION_END = (0xC3, 0xCC)


def _call_before(code: bytes) -> bool:
    return decoder.call_length_before(code) is not None


def _frame_pointer_setup(code: bytes) -> Optional[int]:
    """``[endbr64;] push rbp; mov rbp, rsp``: its length, else None."""
    if not decoder.starts_frame_pointer(code):
        return None
    return 8 if code.startswith(ENDBR64) else 4


def _anchored_starts(window: bytes, _address: int) -> Set[int]:
    """Offsets of each ``endbr64`` and of each byte after a ``ret`` or ``int3``."""
    found = set()
    at = window.find(ENDBR64)
    while at >= 0:
        found.add(at)
        at = window.find(ENDBR64, at + 1)
    for end in FUNCTION_END:
        at = window.find(end)
        while at >= 0:
            found.add(at + 1)
            at = window.find(end, at + 1)
    return found


X86_64 = Architecture(
    name="x86-64",
    pc="rip", sp="rsp", fp="rbp", link_register=None,
    callee_saved=decoder.CALLEE_SAVED,
    dwarf_registers={0: "rax", 1: "rdx", 2: "rcx", 3: "rbx", 4: "rsi", 5: "rdi", 6: "rbp",
                     7: "rsp", 8: "r8", 9: "r9", 10: "r10", 11: "r11", 12: "r12", 13: "r13",
                     14: "r14", 15: "r15"},
    return_address_column=16,
    call_window=8,
    call_before=_call_before,
    code_address=lambda address: address,
    frame_pointer_setup=_frame_pointer_setup,
    decode_prologue=decoder.decode_prologue,
    decode_frame_setup=decoder.decode_frame_setup,
    decode_error=decoder.DecodeError,
    instruction_alignment=1,
    anchored_starts=_anchored_starts,
    debugger_names=("i386:x86-64", "x86_64", "x86-64"),
    elf_machine=62,
)
