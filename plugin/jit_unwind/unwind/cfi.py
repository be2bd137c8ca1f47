"""Unwind a native frame with its file's DWARF call frame information (``.eh_frame``).

For debuggers that cannot resume their own unwinding from registers we recovered (LLDB's
frame providers): once a walk through JIT code reaches a native caller, its caller is
found by the CFA rule of its FDE.  Only the common rules are evaluated (CFA = register +
offset; registers saved at CFA + offset, or unchanged); DWARF expressions end the walk.
Entries are parsed when first needed (pyelftools), tables kept per path, size and mtime.
"""

import bisect
import io
from typing import Dict, Iterable, List, Optional, Tuple

from ..arch import X86_64, Architecture
from ..file_cache import FileCache
from ..rawelf import RawElf, file_bias
from ..regions.nocfi import search_table as read_search_table
from ..target import Memory

# x86-64's (System V psABI), for the callers that name them.
DWARF_REGISTERS = X86_64.dwarf_registers
RETURN_ADDRESS = X86_64.return_address_column
CALLEE_SAVED = X86_64.callee_saved
MAX_FILES = 32
# What unwind_with_cfi returns for an outermost frame (its return address is undefined,
# as for _start and a thread's start routine).
OUTERMOST: Dict[str, int] = {}


class CfiTable:
    """The FDEs of one ELF file, sorted by start (file addresses).

    The FDE covering a pc is found through ``.eh_frame_hdr``'s search table and only
    that FDE (and its CIE) is parsed: pyelftools 0.29 (Debian's, which GDB 13 and
    lldb-19 use) builds its parsers anew for every entry, about 15 s for all of
    libpython's.  Without a search table every entry is parsed once."""

    def __init__(self, path: str):
        from elftools.dwarf.callframe import CallFrameInfo
        from elftools.dwarf.structs import DWARFStructs
        from elftools.elf.elffile import ELFFile
        self._handle = open(path, "rb")  # kept for the table's life
        elf = ELFFile(self._handle)
        self._starts: List[int] = []
        self._offsets: List[int] = []
        self._entries: Dict[int, object] = {}
        frames = elf.get_section_by_name(".eh_frame")
        if frames is None or not frames["sh_size"]:
            return
        data = frames.data()
        self._cfi = CallFrameInfo(io.BytesIO(data), len(data), frames["sh_addr"],
                                  DWARFStructs(little_endian=True, dwarf_format=32,
                                               address_size=8), for_eh_frame=True)
        header = elf.get_section_by_name(".eh_frame_hdr")
        index = None if header is None else search_table(
            header.data(), header["sh_addr"], frames["sh_addr"], len(data))
        if index is not None:
            self._starts, self._offsets = index
            return
        found = []
        for entry in self._cfi.get_entries():
            header = getattr(entry, "header", None)
            if header is not None and "initial_location" in header:
                found.append((header["initial_location"], entry.offset, entry))
        found.sort(key=lambda item: item[0])
        self._starts = [item[0] for item in found]
        self._offsets = [item[1] for item in found]
        self._entries = {item[1]: item[2] for item in found}

    def _entry(self, offset: int):
        entry = self._entries.get(offset)
        if entry is None:
            entry = self._entries[offset] = self._cfi._parse_entry_at(offset)
        return entry

    def row_at(self, file_pc: int):
        """The decoded CFI row in force at ``file_pc``, None when no FDE covers it."""
        index = bisect.bisect_right(self._starts, file_pc) - 1
        if index < 0:
            return None
        try:
            entry = self._entry(self._offsets[index])
            header = entry.header
            start = header["initial_location"]
            if not start <= file_pc < start + header["address_range"]:
                return None
            table = entry.get_decoded().table
        except Exception:  # a broken entry, an instruction pyelftools cannot decode
            return None
        row = None
        for candidate in table:
            if candidate["pc"] <= file_pc:
                row = candidate
            else:
                break
        return row


MAX_FDES = 1_000_000


def search_table(header: bytes, header_address: int, frames_address: int,
                 frames_size: int) -> Optional[Tuple[List[int], List[int]]]:
    """(FDE starts, FDE offsets in .eh_frame), sorted by start, from .eh_frame_hdr's
    binary search table (regions/nocfi.py reads it); None for a table in another
    encoding, cut short, or pointing outside ``.eh_frame``."""
    try:
        index = read_search_table(header, header_address, frames_address, MAX_FDES)
    except ValueError:
        return None
    if index is None or any(not 0 <= offset < frames_size for offset in index[1]):
        return None
    return index


_tables: FileCache[Optional[CfiTable]] = FileCache(MAX_FILES)
_loads: FileCache[Optional[List[Tuple[int, int]]]] = FileCache(MAX_FILES)  # PT_LOADs


def cfi_table(path: str) -> Optional[CfiTable]:
    """The .eh_frame table of ``path``, None when it has none we can read (not ELF, no
    pyelftools, a broken table)."""
    return _tables.get(path, CfiTable, None)


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
    loads = _loads.get(path, _read_loads, None)
    bias = file_bias(path, mappings, loads) if loads else None
    table = cfi_table(path) if bias is not None else None
    row = table.row_at(return_address - 1 - bias) if table is not None else None
    cfa_rule = row.get("cfa") if row is not None else None
    if cfa_rule is None or getattr(cfa_rule, "expr", None) is not None \
            or arch.dwarf_registers.get(cfa_rule.reg) != arch.sp:
        return None
    return caller_registers(memory, row, {arch.sp: sp, arch.pc: return_address}, arch)


def _read_loads(path: str) -> List[Tuple[int, int]]:
    with open(path, "rb") as handle:
        return RawElf(handle, path).loads


def caller_registers(memory: Memory, row, registers: Dict[str, int],
                     arch: Architecture = X86_64) -> Optional[Dict[str, int]]:
    """The caller's registers by one decoded CFI row (pyelftools' dict: "cfa" and
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
