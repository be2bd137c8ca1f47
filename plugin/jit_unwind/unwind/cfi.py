"""Unwind a native frame with its file's DWARF call frame information (``.eh_frame``).

For debuggers that cannot resume their own unwinding from registers we recovered (LLDB's
frame providers): once a walk through JIT code reaches a native caller, its caller is
found by the CFA rule of its FDE.  Only the common rules are evaluated (CFA = register +
offset; registers saved at CFA + offset, or unchanged); DWARF expressions end the walk.
Tables are parsed once per file (pyelftools), keyed by path, size and mtime.
"""

import bisect
import os
from typing import Dict, List, Optional, Tuple

from ..target import Memory

# DWARF register numbers of x86-64 (System V psABI).
DWARF_REGISTERS = {0: "rax", 1: "rdx", 2: "rcx", 3: "rbx", 4: "rsi", 5: "rdi", 6: "rbp",
                   7: "rsp", 8: "r8", 9: "r9", 10: "r10", 11: "r11", 12: "r12", 13: "r13",
                   14: "r14", 15: "r15"}
RETURN_ADDRESS = 16
CALLEE_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")
MAX_FILES = 32
# What unwind_with_cfi returns for an outermost frame (its return address is undefined,
# as for _start and a thread's start routine).
OUTERMOST: Dict[str, int] = {}


class CfiTable:
    """The FDEs of one ELF file, sorted by start (file addresses)."""

    def __init__(self, path: str):
        from elftools.elf.elffile import ELFFile
        self._handle = open(path, "rb")
        elf = ELFFile(self._handle)
        self.entries: List[Tuple[int, int, object]] = []
        if elf.get_section_by_name(".eh_frame") is None:
            return
        dwarf = elf.get_dwarf_info(follow_links=False)
        for entry in dwarf.EH_CFI_entries():
            header = getattr(entry, "header", None)
            if header is None or "initial_location" not in header:
                continue  # a CIE or a terminator
            start = header["initial_location"]
            self.entries.append((start, start + header["address_range"], entry))
        self.entries.sort(key=lambda item: item[0])
        self._starts = [item[0] for item in self.entries]

    def row_at(self, file_pc: int):
        """The decoded CFI row in force at ``file_pc``, None when no FDE covers it."""
        index = bisect.bisect_right(getattr(self, "_starts", []), file_pc) - 1
        if index < 0:
            return None
        start, end, entry = self.entries[index]
        if not start <= file_pc < end:
            return None
        row = None
        for candidate in entry.get_decoded().table:
            if candidate["pc"] <= file_pc:
                row = candidate
            else:
                break
        return row


_tables: Dict[Tuple[str, int, float], Optional[CfiTable]] = {}


def cfi_table(path: str) -> Optional[CfiTable]:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = (path, stat.st_size, stat.st_mtime)
    if key not in _tables:
        if len(_tables) >= MAX_FILES:
            _tables.clear()
        try:
            _tables[key] = CfiTable(path)
        except Exception:  # not ELF, no pyelftools, a broken table: no CFI
            _tables[key] = None
    return _tables[key]


def unwind_with_cfi(memory: Memory, path: str, file_pc: int, registers: Dict[str, int]
                    ) -> Optional[Dict[str, int]]:
    """The caller's registers (``rip``, ``rsp``, callee-saved ones known) of the frame
    whose lookup pc is ``file_pc`` in ``path``; None when the CFI cannot tell;
    OUTERMOST (empty) when it says the frame has no caller."""
    table = cfi_table(path)
    row = table.row_at(file_pc) if table is not None else None
    if row is None:
        return None
    return caller_registers(memory, row, registers)


def caller_registers(memory: Memory, row, registers: Dict[str, int]
                     ) -> Optional[Dict[str, int]]:
    """The caller's registers by one decoded CFI row (pyelftools' dict: "cfa" and
    register rules); None when the row cannot tell; OUTERMOST when it says the frame
    has no caller."""
    cfa_rule = row.get("cfa")
    if cfa_rule is None or getattr(cfa_rule, "expr", None) is not None:
        return None
    base = registers.get(DWARF_REGISTERS.get(cfa_rule.reg, ""))
    if base is None:
        return None
    cfa = base + cfa_rule.offset
    ra_rule = row.get(RETURN_ADDRESS)
    if ra_rule is not None and ra_rule.type == "UNDEFINED":
        return OUTERMOST
    caller = {name: registers[name] for name in CALLEE_SAVED if name in registers}
    for number, name in list(DWARF_REGISTERS.items()) + [(RETURN_ADDRESS, "rip")]:
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
            other = registers.get(DWARF_REGISTERS.get(rule.arg, ""))
            if other is None:
                caller.pop(name, None)
            else:
                caller[name] = other
        elif kind == "SAME_VALUE":
            pass
        else:  # UNDEFINED or an expression: unknown
            caller.pop(name, None)
    if "rip" not in caller:
        return None
    caller["rsp"] = cfa
    return caller
