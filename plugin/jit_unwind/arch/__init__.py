"""What the unwinder needs to know about a processor, as data: register names and DWARF
numbers, where a return address lives, the frame record, the callee-saved registers,
and the instruction decoding the strategies rely on (a call before a return address, a
prologue, the frame-pointer set-up).  The walk and the strategies ask the frame's
``Architecture`` instead of naming x86-64's registers; each processor is one instance
(``x86_64.X86_64``, ``aarch64.AARCH64``)."""

from __future__ import annotations  # annotations unevaluated: less work at load

from typing import Optional

from .base import Architecture
from .x86_64 import X86_64

__all__ = ["Architecture", "X86_64", "AARCH64", "by_debugger_name", "by_elf_machine"]


def _aarch64() -> Architecture:
    from .aarch64 import AARCH64
    return AARCH64


def __getattr__(name: str):
    if name == "AARCH64":  # its decoder is imported only where aarch64 code is met
        return _aarch64()
    raise AttributeError(name)


def by_debugger_name(name: str) -> Optional[Architecture]:
    """The architecture a debugger calls ``name`` (GDB: ``i386:x86-64``, ``aarch64``;
    LLDB's triples: ``x86_64``, ``aarch64``/``arm64``), None for one we do not unwind."""
    if name in X86_64.debugger_names:
        return X86_64
    aarch64 = _aarch64()
    if name in aarch64.debugger_names:
        return aarch64
    return None


def by_elf_machine(machine: int) -> Optional[Architecture]:
    """The architecture of an ELF file's ``e_machine``, None for another."""
    if machine == X86_64.elf_machine:
        return X86_64
    aarch64 = _aarch64()
    return aarch64 if machine == aarch64.elf_machine else None
