"""``.eh_frame`` for JIT code whose stack effect we decoded instruction by instruction.

One CIE (CFA = rsp+8 at entry, return address at CFA-8) and one FDE per function, with
absolute ``pc_begin`` (DW_EH_PE_absptr): the code sits at the same address in the
process and in the symbol file.  The rules come from :func:`arch.x86_64_decoder.decode_steps`,
so they cover only the bytes it understood: a debugger finds no rule beyond them.
"""

import struct
import sys
from array import array
from typing import Sequence, Tuple

from ..arch.x86_64_decoder import CALLEE_SAVED, StackEffect

# DWARF register numbers of x86-64 (System V ABI).
DWARF_REGISTER = {"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6,
                  "rsp": 7, "r8": 8, "r9": 9, "r10": 10, "r11": 11, "r12": 12, "r13": 13,
                  "r14": 14, "r15": 15}
RETURN_ADDRESS = 16
DATA_ALIGN = -8

DW_CFA_advance_loc = 0x40
DW_CFA_offset = 0x80
DW_CFA_restore = 0xC0
DW_CFA_advance_loc1 = 0x02
DW_CFA_advance_loc2 = 0x03
DW_CFA_advance_loc4 = 0x04
DW_CFA_undefined = 0x07
DW_CFA_same_value = 0x08
DW_CFA_def_cfa = 0x0C
DW_CFA_def_cfa_offset = 0x0E
# Used where a JIT's own rules are written again (table_rules.py).
DW_CFA_restore_extended = 0x06
DW_CFA_register = 0x09
DW_CFA_def_cfa_expression = 0x0F
DW_CFA_expression = 0x10
DW_CFA_offset_extended_sf = 0x11
DW_CFA_def_cfa_sf = 0x12
DW_CFA_val_offset_sf = 0x15
DW_CFA_val_expression = 0x16


def uleb128(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"uleb128 of a negative number: {value}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def sleb128(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte if done else byte | 0x80)
        if done:
            return bytes(out)


def advance_loc(delta: int) -> bytes:
    if delta < 0x40:
        return bytes([DW_CFA_advance_loc | delta])
    if delta < 0x100:
        return bytes([DW_CFA_advance_loc1, delta])
    if delta < 0x10000:
        return struct.pack("<BH", DW_CFA_advance_loc2, delta)
    return struct.pack("<BI", DW_CFA_advance_loc4, delta)


def cfa_program(steps: Sequence[StackEffect]) -> bytes:
    """Call frame instructions for ``steps`` (the first at offset 0, in the CIE's state)."""
    out = bytearray()
    depth = 0
    saved: dict[str, int] = {}
    lost: set[str] = set()
    location = 0
    for step in steps:
        changes = bytearray()
        if step.depth != depth:
            changes += bytes([DW_CFA_def_cfa_offset]) + uleb128(step.depth + 8)
        step_saved = dict(step.saved)
        for name in CALLEE_SAVED:
            number = DWARF_REGISTER[name]
            if name in step_saved and saved.get(name) != step_saved[name]:
                # Saved at entry sp + offset = CFA - 8 + offset; factored by -8.
                changes += bytes([DW_CFA_offset | number]) + uleb128(
                    (8 - step_saved[name]) // 8)
            elif name not in step_saved and name in saved:
                changes += bytes([DW_CFA_restore | number])
            if name in step.lost and name not in lost:
                changes += bytes([DW_CFA_undefined]) + uleb128(number)
        if changes:
            out += advance_loc(step.offset - location) + changes
            location = step.offset
        depth, saved, lost = step.depth, step_saved, set(step.lost)
    return bytes(out)


def _cie() -> bytes:
    body = (struct.pack("<IB", 0, 1) + b"zR\0" + uleb128(1) + sleb128(DATA_ALIGN)
            + uleb128(RETURN_ADDRESS) + uleb128(1) + b"\x00"  # FDE pointers: absptr
            + bytes([DW_CFA_def_cfa]) + uleb128(DWARF_REGISTER["rsp"]) + uleb128(8)
            + bytes([DW_CFA_offset | RETURN_ADDRESS]) + uleb128(1))
    return _padded(body)


def _padded(body: bytes) -> bytes:
    """``body`` with its length word, padded with DW_CFA_nop to a multiple of 8."""
    body += b"\0" * (-(len(body) + 4) % 8)
    return struct.pack("<I", len(body)) + body


def build_eh_frame(starts: Sequence[int], rules: Sequence[Tuple[int, bytes]]) -> bytes:
    """The section for functions at ``starts`` with ``rules``: (bytes covered, CFA
    program) each."""
    if rules and rules.count(rules[0]) == len(rules):  # C-level; shared tuples
        return _one_rule(starts, rules[0], len(rules))
    parts = [_cie()]
    offset = len(parts[0])
    tails: dict = {}  # program -> (its FDE's length word + padded tail); programs repeat
    pack = struct.Struct("<IIQQ").pack
    for start, (size, program) in zip(starts, rules):
        tail = tails.get(program)
        if tail is None:
            body = uleb128(0) + program
            body += b"\0" * (-(len(body) + 24) % 8)  # DW_CFA_nop up to 8-byte alignment
            tail = tails[program] = (20 + len(body), body)
        # length, CIE pointer (from this field back to the CIE at offset 0), pc_begin,
        # pc_range, then augmentation data length and instructions.
        parts.append(pack(tail[0], offset + 4, start, size))
        parts.append(tail[1])
        offset += 4 + tail[0]
    parts.append(b"\0\0\0\0")  # terminator
    return b"".join(parts)


def _one_rule(starts: Sequence[int], rule: Tuple[int, bytes], count: int) -> bytes:
    """:func:`build_eh_frame` when every function has the same rule (identical code:
    every CPython perf trampoline, a perf map of one code shape): the FDEs are
    equal-sized runs of 64-bit words, filled column by column with slice assignments
    instead of one pack each."""
    size, program = rule
    cie = _cie()
    body = uleb128(0) + program
    body += b"\0" * (-(len(body) + 24) % 8)
    fde_size = 24 + len(body)  # a multiple of 8, as the CIE's size
    stride = fde_size // 8
    table = array("Q", bytes(fde_size * count))
    # Length (fde_size - 4) in the low half, the CIE pointer (from that field back to
    # offset 0) in the high half: it grows by fde_size from one FDE to the next.
    first = (fde_size - 4) | ((len(cie) + 4) << 32)
    table[0::stride] = array("Q", range(first, first + count * (fde_size << 32),
                                        fde_size << 32))
    table[1::stride] = array("Q", starts)
    table[2::stride] = array("Q", [size]) * count
    for index, word in enumerate(array("Q", body)):
        table[3 + index::stride] = array("Q", [word]) * count
    if sys.byteorder != "little":
        table.byteswap()
    return cie + table.tobytes() + b"\0\0\0\0"
