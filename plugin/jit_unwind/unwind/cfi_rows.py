"""The rows of ``.eh_frame`` call frame information, read with struct: the one reader of
``.eh_frame`` for every path (GDB's and LLDB's walks, ``jit-unwind core --debugger none``,
a jitdump's unwinding records).

pyelftools' reader costs its import (~30 ms) and fails on whole FDEs it cannot decode
(``DW_CFA_GNU_args_size``, common in C++ built with -fexceptions and in libc), where GDB
unwinds.  Here the FDE covering a pc is found through ``.eh_frame_hdr``'s search table
(without one, through a scan of the entries), its CIE's and its own instructions are run
only up to the pc, and the row comes out as a dict ("cfa", register numbers, "pc": where
the row starts) for ``cfi.caller_registers`` to evaluate.  What it does not decode
(64-bit entries, an encoding or opcode not listed) gives no row: no rules rather than
wrong ones."""

from __future__ import annotations  # annotations unevaluated: less work at the import

import struct
from operator import itemgetter
from typing import Dict, List, Optional, Tuple

from ..elf.leb128 import read_sleb, read_uleb
from ..elf.rawelf import headers_of
from ..records import NamedItems
from ..elf.eh_frame_hdr import POINTER_FORMATS, FdeIndex, search_index

MAX_INSTRUCTIONS = 100_000  # in one CIE or FDE: a bound against garbage
MAX_STATES = 64  # remembered with DW_CFA_remember_state
MAX_FDES = 1_000_000
MAX_ROWS = 100_000  # in one FDE's table
ROWS_KEPT = 4096  # rows looked up by pc, per file
# Pointer encodings (DW_EH_PE_*): the low nibble's value formats are POINTER_FORMATS.
_PCREL = 0x10  # the high nibble's application this reader computes (and absolute)


class UnsupportedCfi(Exception):
    """Something this reader does not decode: no rules there."""


class CFARule(NamedItems):
    """(reg, offset, expr): the CFA is register ``reg`` plus ``offset``, or the value
    of the DWARF expression ``expr`` (reg None)."""

    __slots__ = ()
    _fields = ("reg", "offset", "expr")

    def __new__(cls, reg: Optional[int], offset: int, expr: Optional[bytes] = None):
        return tuple.__new__(cls, (reg, offset, expr))

    reg = property(itemgetter(0))
    offset = property(itemgetter(1))
    expr = property(itemgetter(2))


class RegisterRule(NamedItems):
    """(type, arg): OFFSET, VAL_OFFSET, REGISTER, SAME_VALUE, UNDEFINED,
    (VAL_)EXPRESSION and its operand."""

    __slots__ = ()
    _fields = ("type", "arg")

    def __new__(cls, type: str, arg: object = None):
        return tuple.__new__(cls, (type, arg))

    type = property(itemgetter(0))
    arg = property(itemgetter(1))


def _pointer_format(encoding: int) -> str:
    fmt = POINTER_FORMATS.get(encoding & 0x0F)
    if fmt is None:
        raise UnsupportedCfi(f"pointer encoding {encoding:#x}")
    return fmt


def _address_format(encoding: int) -> str:
    """The format of an address this reader computes itself (an FDE's start when no
    search table gives it, DW_CFA_set_loc's operand): absolute or pc-relative."""
    if encoding & 0x70 not in (0, _PCREL) or encoding & 0x80:
        raise UnsupportedCfi(f"address encoding {encoding:#x}")
    return _pointer_format(encoding)


class _Cie:
    __slots__ = ("code_align", "data_align", "fde_encoding", "augmented", "initial")

    def __init__(self, code_align: int, data_align: int, fde_encoding: int,
                 augmented: bool, initial: Dict):
        self.code_align, self.data_align = code_align, data_align
        self.fde_encoding = fde_encoding
        self.augmented = augmented  # 'z': FDEs have augmentation data
        self.initial = initial  # the row its initial instructions leave (CFA and registers)


def search_table(header: bytes, header_address: int, frames_address: int,
                 frames_size: int) -> Optional[FdeIndex]:
    """The FDEs of .eh_frame_hdr's binary search table (``eh_frame_hdr``), its words
    searched in place; None for a table in another encoding, cut short, or pointing
    outside ``.eh_frame``."""
    try:
        index = search_index(header, header_address, frames_address, MAX_FDES)
    except ValueError:
        return None
    if index is None or not index.offsets_within(frames_size):
        return None
    return index


class EhFrame:
    """The ``.eh_frame`` bytes ``data`` placed at ``address``, with a sorted index of
    its FDEs (``index``: starts and offsets, from a search table; scanned when None)."""

    def __init__(self, data: bytes, address: int, index: Optional[FdeIndex] = None):
        self.data, self.address = data, address
        self._cies: Dict[int, _Cie] = {}
        self._rows_at: Dict[int, Optional[dict]] = {}  # a stack's pcs repeat
        self.index = self._scan() if index is None else index

    @classmethod
    def of_file(cls, path: str) -> Optional["EhFrame"]:
        """The ``.eh_frame`` of the ELF file ``path``; None without one (or not ELF)."""
        elf = headers_of(path)
        if elf is None:
            return None
        frames = elf.sections.get(".eh_frame")
        if frames is None or not frames["sh_size"]:
            return None
        header = elf.sections.get(".eh_frame_hdr")
        with open(path, "rb") as handle:  # both sections at one open
            data = frames.data(handle)
            header_data = header.data(handle) if header is not None else None
        index = None if header is None or header_data is None else search_table(
            header_data, header["sh_addr"], frames["sh_addr"], len(data))
        return cls(data, frames["sh_addr"], index)

    def row_at(self, pc: int) -> Optional[dict]:
        """The row in force at ``pc``; None when no FDE covers it or its instructions
        cannot be decoded."""
        try:
            return self._rows_at[pc]
        except KeyError:
            pass
        if len(self._rows_at) >= ROWS_KEPT:
            self._rows_at.clear()
        row = self._rows_at[pc] = self._decoded_row_at(pc)
        return row

    def _decoded_row_at(self, pc: int) -> Optional[dict]:
        index = self.index.before(pc)
        if index < 0:
            return None
        try:
            return self._row(*self.index[index], pc)
        except (UnsupportedCfi, IndexError, ValueError, struct.error, KeyError):
            return None

    def fdes(self) -> List[Tuple[int, int, int]]:
        """(start, end, offset) of every FDE whose header can be read, by start."""
        found = []
        for start, offset in self.index:
            try:
                _cie, _at, size, _end = self._fde(offset)
            except (UnsupportedCfi, IndexError, ValueError, struct.error, KeyError):
                continue
            found.append((start, start + size, offset))
        return found

    def rows(self, start: int, offset: int) -> Optional[List[dict]]:
        """Every row of the FDE at ``offset`` (which starts at ``start``), in order;
        None when its instructions cannot be decoded."""
        table: List[dict] = []
        try:
            self._row(start, offset, None, table)
        except (UnsupportedCfi, IndexError, ValueError, struct.error, KeyError):
            return None
        return table

    def _fde(self, offset: int) -> Tuple[_Cie, int, int, int]:
        """The FDE at ``offset``: its CIE, where its instructions start, its pc range
        and where it ends."""
        data = self.data
        length, pointer = struct.unpack_from("<Ii", data, offset)
        if length == 0xFFFFFFFF:
            raise UnsupportedCfi("64-bit CFI")
        end = offset + 4 + length
        cie = self._cie(offset + 4 - pointer)
        fmt = _pointer_format(cie.fde_encoding)
        at = offset + 8 + struct.calcsize(fmt)  # past pc_begin (known already)
        (size,) = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        if cie.augmented:
            skip, at = read_uleb(data, at)
            at += skip
        if end > len(data):
            raise UnsupportedCfi("an FDE past the section's end")
        return cie, at, size, end

    def _row(self, start: int, offset: int, pc: Optional[int],
             table: Optional[List[dict]] = None) -> Optional[dict]:
        cie, at, size, end = self._fde(offset)
        if pc is not None and not start <= pc < start + size:
            return None
        row = dict(cie.initial)
        row["pc"] = start
        return self._run(at, end, cie, row, pc, table)

    def _scan(self) -> FdeIndex:
        """The index of every FDE, for a section without a search table (a jitdump's,
        a file linked without --eh-frame-hdr)."""
        data, at, found = self.data, 0, []
        for _ in range(MAX_FDES):
            if at + 8 > len(data):
                break
            length, pointer = struct.unpack_from("<Ii", data, at)
            if length == 0 or length == 0xFFFFFFFF:
                break  # the terminator, or 64-bit entries this reader does not read
            if pointer:
                try:
                    cie = self._cie(at + 4 - pointer)
                    fmt = _address_format(cie.fde_encoding)
                    (value,) = struct.unpack_from(fmt, data, at + 8)
                except (UnsupportedCfi, IndexError, ValueError, struct.error, KeyError):
                    cie = None
                if cie is not None:
                    if cie.fde_encoding & 0x70 == _PCREL:
                        value += self.address + at + 8
                    found.append((value & 0xFFFFFFFFFFFFFFFF, at))
            at += 4 + length
        found.sort()
        return FdeIndex([item[0] for item in found], [item[1] for item in found])

    def _cie(self, offset: int) -> _Cie:
        found = self._cies.get(offset)
        if found is None:
            found = self._cies[offset] = self._read_cie(offset)
        return found

    def _read_cie(self, offset: int) -> _Cie:
        data = self.data
        length, identifier = struct.unpack_from("<II", data, offset)
        if length == 0xFFFFFFFF or identifier != 0:
            raise UnsupportedCfi("not a 32-bit CIE")
        end = offset + 4 + length
        version = data[offset + 8]
        at = data.index(b"\0", offset + 9)
        augmentation = bytes(data[offset + 9:at])
        at += 1
        if b"eh" in augmentation:
            raise UnsupportedCfi("an 'eh' augmentation")
        code_align, at = read_uleb(data, at)
        data_align, at = read_sleb(data, at)
        if version == 1:
            at += 1
        else:
            _return_register, at = read_uleb(data, at)
        encoding = 0
        augmented = augmentation.startswith(b"z")
        if augmented:
            size, at = read_uleb(data, at)
            body, at = at, at + size
            for letter in augmentation[1:]:
                if letter == ord("R"):
                    encoding = data[body]
                    body += 1
                elif letter == ord("L"):
                    body += 1
                elif letter == ord("P"):
                    body += 1 + struct.calcsize(_pointer_format(data[body]))
                elif letter in (ord("S"), ord("B")):
                    pass
                else:
                    raise UnsupportedCfi(f"augmentation {augmentation!r}")
        cie = _Cie(code_align, data_align, encoding, augmented, {})
        initial = self._run(at, end, cie, {"cfa": CFARule(None, 0), "pc": 0}, None)
        cie.initial = {k: v for k, v in initial.items() if k != "pc"}
        return cie

    def _run(self, at: int, end: int, cie: _Cie, row: dict, pc: Optional[int],
             table: Optional[List[dict]] = None) -> dict:
        """``row`` after the instructions from ``at`` to ``end`` up to ``pc`` (all of
        them for None); each row the pc moves past appended to ``table`` if given."""
        data = self.data
        states: List[dict] = []
        code_align, data_align = cie.code_align, cie.data_align
        for _ in range(MAX_INSTRUCTIONS):
            if at >= end:
                break
            op = data[at]
            at += 1
            high, low = op & 0xC0, op & 0x3F
            location = None
            if high == 0x40 or op in (0x02, 0x03, 0x04):  # advance_loc, advance_loc1/2/4
                if high == 0x40:
                    delta = low
                else:
                    width = {0x02: 1, 0x03: 2, 0x04: 4}[op]
                    delta = int.from_bytes(data[at:at + width], "little")
                    at += width
                location = row["pc"] + delta * code_align
            elif op == 0x01:  # set_loc, in the FDE's pointer encoding
                fmt = _address_format(cie.fde_encoding)
                (location,) = struct.unpack_from(fmt, data, at)
                if cie.fde_encoding & 0x70 == _PCREL:
                    location += self.address + at
                at += struct.calcsize(fmt)
            elif high == 0x80:  # offset
                value, at = read_uleb(data, at)
                row[low] = RegisterRule("OFFSET", value * data_align)
            elif high == 0xC0:  # restore
                _restore(row, cie, low)
            elif op in (0x00, 0x2D):  # nop; aarch64's negate_ra_state (code_address
                pass  # takes the signature off a return address)
            elif op in (0x05, 0x11, 0x14, 0x15, 0x2F):
                # offset_extended(_sf), val_offset(_sf), GNU_negative_offset_extended
                register, at = read_uleb(data, at)
                value, at = (read_sleb if op in (0x11, 0x15) else read_uleb)(data, at)
                if op == 0x2F:
                    value = -value
                row[register] = RegisterRule("VAL_OFFSET" if op in (0x14, 0x15)
                                             else "OFFSET", value * data_align)
            elif op == 0x06:  # restore_extended
                register, at = read_uleb(data, at)
                _restore(row, cie, register)
            elif op in (0x07, 0x08):  # undefined, same_value
                register, at = read_uleb(data, at)
                row[register] = RegisterRule("UNDEFINED" if op == 0x07 else "SAME_VALUE")
            elif op == 0x09:  # register
                register, at = read_uleb(data, at)
                other, at = read_uleb(data, at)
                row[register] = RegisterRule("REGISTER", other)
            elif op == 0x0A:  # remember_state
                if len(states) >= MAX_STATES:
                    raise UnsupportedCfi("too many remembered states")
                states.append(dict(row))
            elif op == 0x0B:  # restore_state
                if not states:
                    raise UnsupportedCfi("restore_state without remember_state")
                location_now = row["pc"]
                row = states.pop()
                row["pc"] = location_now
            elif op in (0x0C, 0x12):  # def_cfa, def_cfa_sf
                register, at = read_uleb(data, at)
                if op == 0x0C:
                    offset, at = read_uleb(data, at)
                else:
                    offset, at = read_sleb(data, at)
                    offset *= data_align
                row["cfa"] = CFARule(register, offset)
            elif op == 0x0D:  # def_cfa_register
                register, at = read_uleb(data, at)
                row["cfa"] = CFARule(register, row["cfa"].offset)
            elif op in (0x0E, 0x13):  # def_cfa_offset, def_cfa_offset_sf
                if op == 0x0E:
                    offset, at = read_uleb(data, at)
                else:
                    offset, at = read_sleb(data, at)
                    offset *= data_align
                row["cfa"] = CFARule(row["cfa"].reg, offset)
            elif op == 0x0F:  # def_cfa_expression
                length, at = read_uleb(data, at)
                row["cfa"] = CFARule(None, 0, bytes(data[at:at + length]))
                at += length
            elif op in (0x10, 0x16):  # expression, val_expression
                register, at = read_uleb(data, at)
                length, at = read_uleb(data, at)
                row[register] = RegisterRule("EXPRESSION" if op == 0x10 else "VAL_EXPRESSION",
                                             bytes(data[at:at + length]))
                at += length
            elif op == 0x2E:  # GNU_args_size: for landing pads, nothing for the rules
                _size, at = read_uleb(data, at)
            else:
                raise UnsupportedCfi(f"CFA opcode {op:#x}")
            if location is not None:
                if pc is not None and location > pc:
                    return row
                if table is not None:
                    if len(table) >= MAX_ROWS:
                        raise UnsupportedCfi("too many rows")
                    table.append(dict(row))
                row["pc"] = location
        else:
            raise UnsupportedCfi("too many instructions")
        if table is not None:
            table.append(dict(row))
        return row


def _restore(row: dict, cie: _Cie, register: int) -> None:
    if register in cie.initial:
        row[register] = cie.initial[register]
    else:
        row.pop(register, None)


__all__ = ["CFARule", "EhFrame", "RegisterRule", "search_table"]
