"""``.eh_frame`` rows read with struct, for the core reader's native callers.

``unwind/cfi.py`` reads the same rows through pyelftools, whose import alone (~30 ms)
is a tenth of ``jit-unwind core --debugger none``.  Here the FDE covering a pc is found
through ``.eh_frame_hdr``'s search table, its CIE's and its own instructions are run
only up to the pc, and the row comes out in pyelftools' shape, for ``unwind/cfi.py``'s
``caller_registers`` to evaluate.  What this reader does not decode (no search table,
64-bit entries, ``DW_CFA_set_loc``, an encoding or opcode not listed) is left to
``unwind/cfi.py``."""

import struct
from typing import Dict, List, NamedTuple, Optional

from ..file_cache import FileCache
from ..leb128 import read_sleb, read_uleb
from ..rawelf import RawElf

MAX_INSTRUCTIONS = 100_000  # in one CIE or FDE: a bound against garbage
MAX_STATES = 64  # remembered with DW_CFA_remember_state
# Pointer encodings (DW_EH_PE_*): the low nibble's value formats.
_FORMATS = {0x00: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i",
            0x0C: "<q"}


class Unsupported(Exception):
    """Something this reader does not decode: pyelftools' reader is asked."""


class CFARule(NamedTuple):
    reg: Optional[int]
    offset: int
    expr: Optional[bytes] = None


class RegisterRule(NamedTuple):
    type: str
    arg: object = None


def _pointer_size(encoding: int) -> int:
    fmt = _FORMATS.get(encoding & 0x0F)
    if fmt is None:
        raise Unsupported(f"pointer encoding {encoding:#x}")
    return struct.calcsize(fmt)


class _Cie(NamedTuple):
    code_align: int
    data_align: int
    fde_encoding: int
    augmented: bool  # 'z': FDEs have augmentation data
    initial: Dict  # the row its initial instructions leave (CFA and register rules)


class EhFrame:
    """One file's ``.eh_frame`` with ``.eh_frame_hdr``'s search table."""

    def __init__(self, path: str):
        from ..unwind.cfi import search_table
        with open(path, "rb") as handle:
            elf = RawElf(handle, path)
            frames = elf.sections.get(".eh_frame")
            header = elf.sections.get(".eh_frame_hdr")
            if frames is None or header is None or not frames["sh_size"]:
                raise Unsupported("no .eh_frame or no .eh_frame_hdr")
            self.data = frames.data()
            index = search_table(header.data(), header["sh_addr"], frames["sh_addr"],
                                 len(self.data))
        if index is None:
            raise Unsupported("no search table")
        self.address = frames["sh_addr"]
        self._starts, self._offsets = index
        self._cies: Dict[int, _Cie] = {}

    def row_at(self, file_pc: int) -> Optional[dict]:
        """The row in force at ``file_pc`` as pyelftools decodes it ("cfa", register
        numbers), None when no FDE covers it."""
        import bisect
        index = bisect.bisect_right(self._starts, file_pc) - 1
        if index < 0:
            return None
        start, offset = self._starts[index], self._offsets[index]
        data = self.data
        length, pointer = struct.unpack_from("<Ii", data, offset)
        if length == 0xFFFFFFFF:
            raise Unsupported("64-bit CFI")
        end = offset + 4 + length
        cie = self._cie(offset + 4 - pointer)
        at = offset + 8 + _pointer_size(cie.fde_encoding)  # past pc_begin (the table's)
        fmt = _FORMATS[cie.fde_encoding & 0x0F]
        (size,) = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        if not start <= file_pc < start + size:
            return None
        if cie.augmented:
            skip, at = read_uleb(data, at)
            at += skip
        row = dict(cie.initial)
        row["pc"] = start
        return _run(data, at, end, cie, row, file_pc)

    def _cie(self, offset: int) -> _Cie:
        found = self._cies.get(offset)
        if found is None:
            found = self._cies[offset] = self._read_cie(offset)
        return found

    def _read_cie(self, offset: int) -> _Cie:
        data = self.data
        length, identifier = struct.unpack_from("<II", data, offset)
        if length == 0xFFFFFFFF or identifier != 0:
            raise Unsupported("not a 32-bit CIE")
        end = offset + 4 + length
        version = data[offset + 8]
        at = data.index(b"\0", offset + 9)
        augmentation = bytes(data[offset + 9:at])
        at += 1
        if b"eh" in augmentation:
            raise Unsupported("an 'eh' augmentation")
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
                    body += 1 + _pointer_size(data[body])
                elif letter in (ord("S"), ord("B")):
                    pass
                else:
                    raise Unsupported(f"augmentation {augmentation!r}")
        cie = _Cie(code_align, data_align, encoding, augmented, {})
        initial = _run(data, at, end, cie, {"cfa": CFARule(None, 0), "pc": 0}, None)
        return cie._replace(initial={k: v for k, v in initial.items() if k != "pc"})


def _run(data: bytes, at: int, end: int, cie: _Cie, row: dict,
         file_pc: Optional[int]) -> dict:
    """``row`` after the instructions from ``at`` to ``end`` up to ``file_pc`` (all of
    them for None: a CIE's initial instructions)."""
    states: List[dict] = []
    code_align, data_align = cie.code_align, cie.data_align
    for _ in range(MAX_INSTRUCTIONS):
        if at >= end:
            return row
        op = data[at]
        at += 1
        high, low = op & 0xC0, op & 0x3F
        if high == 0x40 or op in (0x02, 0x03, 0x04):  # advance_loc, advance_loc1/2/4
            if high == 0x40:
                delta = low
            else:
                width = {0x02: 1, 0x03: 2, 0x04: 4}[op]
                delta = int.from_bytes(data[at:at + width], "little")
                at += width
            pc = row["pc"] + delta * code_align
            if file_pc is not None and pc > file_pc:
                return row
            row["pc"] = pc
        elif high == 0x80:  # offset
            value, at = read_uleb(data, at)
            row[low] = RegisterRule("OFFSET", value * data_align)
        elif high == 0xC0:  # restore
            _restore(row, cie, low)
        elif op == 0x00:  # nop
            pass
        elif op in (0x05, 0x11, 0x14, 0x15):  # offset_extended(_sf), val_offset(_sf)
            register, at = read_uleb(data, at)
            value, at = (read_sleb if op in (0x11, 0x15) else read_uleb)(data, at)
            row[register] = RegisterRule("OFFSET" if op in (0x05, 0x11) else "VAL_OFFSET",
                                         value * data_align)
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
                raise Unsupported("too many remembered states")
            states.append(dict(row))
        elif op == 0x0B:  # restore_state
            if not states:
                raise Unsupported("restore_state without remember_state")
            pc = row["pc"]
            row = states.pop()
            row["pc"] = pc
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
            row[register] = RegisterRule(
                "EXPRESSION" if op == 0x10 else "VAL_EXPRESSION", bytes(data[at:at + length]))
            at += length
        elif op == 0x2E:  # GNU_args_size: nothing for the rules
            _size, at = read_uleb(data, at)
        else:  # set_loc and the rest
            raise Unsupported(f"CFA opcode {op:#x}")
    raise Unsupported("too many instructions")


def _restore(row: dict, cie: _Cie, register: int) -> None:
    if register in cie.initial:
        row[register] = cie.initial[register]
    else:
        row.pop(register, None)


_tables: FileCache[Optional[EhFrame]] = FileCache(32)


def unwind_with_cfi(memory, path: str, file_pc: int, registers: Dict[str, int],
                    arch=None) -> Optional[Dict[str, int]]:
    """``unwind/cfi.py``'s unwind_with_cfi, the row read here where this reader can
    (``arch``: the processor's registers; x86-64's by default)."""
    from ..unwind import cfi
    table = _tables.get(path, _open, None)
    try:
        row = table.row_at(file_pc) if table is not None else _UNREAD
    except (Unsupported, IndexError, ValueError, struct.error, KeyError):
        row = _UNREAD
    if row is _UNREAD:
        import importlib.util
        if importlib.util.find_spec("elftools") is None:
            from .sections import needed_pyelftools
            needed_pyelftools("call frame information")
            return None
        return cfi.unwind_with_cfi(memory, path, file_pc, registers, arch or cfi.X86_64)
    if row is None:
        return None
    return cfi.caller_registers(memory, row, registers, arch or cfi.X86_64)


_UNREAD = object()  # no row from this reader: ask unwind/cfi.py


def _open(path: str) -> Optional[EhFrame]:
    try:
        return EhFrame(path)
    except Unsupported:
        return None  # pyelftools' reader for the whole file


__all__ = ["EhFrame", "unwind_with_cfi"]
