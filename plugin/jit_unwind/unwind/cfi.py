"""Unwind a native frame with its file's DWARF call frame information (``.eh_frame``).

For debuggers that cannot resume their own unwinding from registers we recovered (LLDB's
frame providers), for the core reader (``--debugger none``), and for the stack scan's
check of a return address into a file's code: the caller is found by the CFA rule of
the FDE covering the pc.  Only the common rules are evaluated (CFA = register + offset;
registers saved at CFA + offset, or unchanged); DWARF expressions end the walk.  Rows
are read by ``cfi_rows`` when first needed, tables kept per file (``FileCache``).
"""

from __future__ import annotations

from typing import Dict, Iterable, Optional

from ..arch import X86_64, Architecture
from ..file_cache import FileCache
from ..elf.rawelf import file_bias, headers_of
from ..target import Memory
from .cfi_rows import EhFrame

# x86-64's (System V psABI), for the callers that name them.
DWARF_REGISTERS = X86_64.dwarf_registers
RETURN_ADDRESS = X86_64.return_address_column
CALLEE_SAVED = X86_64.callee_saved
MAX_FILES = 32
# What unwind_with_cfi returns for an outermost frame (its return address is undefined,
# as for _start and a thread's start routine).
OUTERMOST: Dict[str, int] = {}


_tables: FileCache[Optional[EhFrame]] = FileCache(MAX_FILES)


def cfi_table(path: str) -> Optional[EhFrame]:
    """The .eh_frame table of ``path``, None when it has none we can read (not ELF, no
    such section, a broken one)."""
    return _tables.get(path, EhFrame.of_file, None)


def unwind_with_cfi(memory: Memory, path: str, file_pc: int, registers: Dict[str, int],
                    arch: Architecture = X86_64) -> Optional[Dict[str, int]]:
    """The caller's registers (pc, sp, callee-saved ones known) of the frame
    whose lookup pc is ``file_pc`` in ``path``; None when the CFI cannot tell;
    OUTERMOST (empty) when it says the frame has no caller."""
    table = cfi_table(path)
    row = table.row_at(file_pc) if table is not None else None
    if row is None:
        return None
    return caller_registers(memory, row, registers, arch)


def cfi_rsp_caller(memory: Memory, mappings: Iterable, path: str, return_address: int,
                   sp: int, arch: Architecture = X86_64) -> Optional[Dict[str, int]]:
    """The caller's pc and sp of a frame at ``return_address`` in the file
    ``path`` (mapped as ``mappings`` say), whose sp is ``sp``, when its CFI row there
    computes the CFA from sp (it needs no other register); None when no row does,
    OUTERMOST for an outermost frame.  The load bias comes from the file's first
    mapping: LLDB's cores give every mapping file offset 0."""
    elf = headers_of(path)
    bias = file_bias(path, mappings, elf.loads) if elf is not None and elf.loads else None
    table = cfi_table(path) if bias is not None else None
    row = table.row_at(return_address - 1 - bias) \
        if table is not None and bias is not None else None
    cfa_rule = row.get("cfa") if row is not None else None
    if cfa_rule is None or getattr(cfa_rule, "expr", None) is not None \
            or arch.dwarf_registers.get(cfa_rule.reg) != arch.sp:
        return None
    return caller_registers(memory, row, {arch.sp: sp, arch.pc: return_address}, arch)


def caller_registers(memory: Memory, row, registers: Dict[str, int],
                     arch: Architecture = X86_64) -> Optional[Dict[str, int]]:
    """The caller's registers by one decoded CFI row (``cfi_rows``' dict: "cfa" and
    register rules); None when the row cannot tell; OUTERMOST when it says the frame
    has no caller.  Where the return address is a register's column (aarch64's x30),
    a row without a rule for it leaves it in that register."""
    dwarf = arch.dwarf_registers
    cfa_rule = row.get("cfa")
    if cfa_rule is None or getattr(cfa_rule, "expr", None) is not None:
        return None
    base = registers.get(dwarf.get(cfa_rule.reg, ""))
    if base is None:
        return None
    cfa = base + cfa_rule.offset
    column = arch.return_address_column
    ra_rule = row.get(column)
    if ra_rule is not None and ra_rule.type == "UNDEFINED":
        return OUTERMOST
    caller = {name: registers[name] for name in arch.callee_saved if name in registers}
    link = arch.link_register
    if link is not None and link in registers:
        caller[link] = registers[link]  # no rule: the return address is still there
    ra_name = arch.pc if link is None else link
    for number, name in list(dwarf.items()) + [(column, ra_name)]:
        rule = row.get(number)
        if rule is None:
            continue
        kind = rule.type
        if kind == "OFFSET":
            value = memory.try_read_u64(cfa + rule.arg)
            if value is None:
                return None
            caller[name] = value
        elif kind == "VAL_OFFSET":
            caller[name] = cfa + rule.arg
        elif kind == "REGISTER":
            other = registers.get(dwarf.get(rule.arg, ""))
            if other is None:
                caller.pop(name, None)
            else:
                caller[name] = other
        elif kind == "SAME_VALUE":
            pass
        else:  # UNDEFINED or an expression: unknown
            caller.pop(name, None)
    if link is not None:
        if link not in caller:
            return None
        caller[arch.pc] = arch.code_address(caller.pop(link))
    if arch.pc not in caller:
        return None
    caller[arch.sp] = cfa
    return caller
