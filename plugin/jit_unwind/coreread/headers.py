"""The headers of DWARF's compilation units and line programs, read with struct (32-bit
DWARF, versions 2 to 5).  Anything else raises UnsupportedDwarf: the caller asks pyelftools.

The objects answer as pyelftools' do where the reader's code uses them (``cu["..."]``,
``cu.structs.address_size``, a line program's ``header["..."]``), so one decoder of
entries and rows serves both."""

import io
from typing import Dict, List, NamedTuple, Optional

from ..elf.leb128 import read_uleb
from .dies import UnsupportedDwarf, string_end

DW_UT_COMPILE, DW_UT_PARTIAL = 1, 3
# Line table entry content types and the forms DWARF 5 headers use for them.
DW_LNCT_PATH, DW_LNCT_DIRECTORY_INDEX = 1, 2
FORM_STRING, FORM_LINE_STRP, FORM_STRP = 0x08, 0x1F, 0x0E
FORM_UDATA, FORM_BLOCK = 0x0F, 0x09
FORM_SIZES = {0x0B: 1, 0x05: 2, 0x06: 4, 0x07: 8, 0x1E: 16}  # data1/2/4/8/16


class Structs(NamedTuple):
    dwarf_format: int
    address_size: int


class UnitHeader:
    """A compilation unit's header: where it and its first entry are, its version,
    address size and abbreviation table."""

    def __init__(self, data: bytes, offset: int):
        if offset + 11 > len(data):
            raise UnsupportedDwarf("a unit header past the section")
        length = int.from_bytes(data[offset:offset + 4], "little")
        if length >= 0xFFFFFFF0:
            raise UnsupportedDwarf("64-bit DWARF")
        version = int.from_bytes(data[offset + 4:offset + 6], "little")
        if 2 <= version <= 4:
            abbrevs = int.from_bytes(data[offset + 6:offset + 10], "little")
            address_size, size = data[offset + 10], 11
        elif version == 5:
            if data[offset + 6] not in (DW_UT_COMPILE, DW_UT_PARTIAL):
                raise UnsupportedDwarf(f"unit type {data[offset + 6]}")
            address_size = data[offset + 7]
            abbrevs = int.from_bytes(data[offset + 8:offset + 12], "little")
            size = 12
        else:
            raise UnsupportedDwarf(f"DWARF version {version}")
        self.cu_offset = offset
        self.cu_die_offset = offset + size
        self.version = version
        self.structs = Structs(32, address_size)
        self._fields = {"unit_length": length, "version": version,
                        "debug_abbrev_offset": abbrevs, "address_size": address_size}

    def __getitem__(self, key):
        return self._fields[key]

    @property
    def end(self) -> int:
        return self.cu_offset + 4 + self["unit_length"]


class FileEntry(NamedTuple):
    name: bytes
    dir_index: int


class LineProgram:
    """A line program's header as ``lines.rows`` and ``Unit.file_name`` read it, and
    where its opcodes are in ``stream``."""

    def __init__(self, data: bytes, offset: int, strings, line_strings):
        at = offset
        length = int.from_bytes(data[at:at + 4], "little")
        if length >= 0xFFFFFFF0:
            raise UnsupportedDwarf("64-bit DWARF")
        end = at + 4 + length
        if end > len(data):
            raise UnsupportedDwarf("a line program past its section")
        version = int.from_bytes(data[at + 4:at + 6], "little")
        if not 2 <= version <= 5:
            raise UnsupportedDwarf(f"line table version {version}")
        at += 6
        if version >= 5:
            at += 2  # address and segment selector sizes
        header_length = int.from_bytes(data[at:at + 4], "little")
        at += 4
        start = at + header_length
        header: Dict[str, object] = {"version": version,
                                     "minimum_instruction_length": data[at]}
        at += 1
        if version >= 4:
            header["maximum_operations_per_instruction"] = data[at]
            at += 1
        header["default_is_stmt"] = data[at]
        header["line_base"] = data[at + 1] - 256 if data[at + 1] >= 128 else data[at + 1]
        header["line_range"] = data[at + 2]
        opcode_base = header["opcode_base"] = data[at + 3]
        at += 4
        header["standard_opcode_lengths"] = list(data[at:at + opcode_base - 1])
        at += max(opcode_base - 1, 0)
        self._data, self._strings, self._line_strings = data, strings, line_strings
        if version >= 5:
            directories, at = self._entries(at)
            files, at = self._entries(at)
            header["include_directory"] = [entry.name for entry in directories]
            header["file_entry"] = files
        else:
            header["include_directory"], at = self._strings_until_empty(at)
            header["file_entry"], at = self._files_v4(at)
        if not 0 < start <= end:
            raise UnsupportedDwarf("a line program header past its program")
        self.header = header
        # Its opcodes alone (the section may be read only in parts: no copy of it all)
        self.stream = io.BytesIO(bytes(data[start:end]))
        self.program_start_offset = 0
        self.program_end_offset = end - start

    def _strings_until_empty(self, at: int):
        found: List[bytes] = []
        data = self._data
        while data[at] != 0:
            end = string_end(data, at)
            found.append(bytes(data[at:end]))
            at = end + 1
        return found, at + 1

    def _files_v4(self, at: int):
        found: List[FileEntry] = []
        data = self._data
        while data[at] != 0:
            end = string_end(data, at)
            name = bytes(data[at:end])
            directory, at = read_uleb(data, end + 1)
            _mtime, at = read_uleb(data, at)
            _size, at = read_uleb(data, at)
            found.append(FileEntry(name, directory))
        return found, at + 1

    def _entries(self, at: int):
        """A DWARF 5 directory or file name table: its format, then its entries."""
        data = self._data
        count = data[at]
        at += 1
        formats = []
        for _ in range(count):
            kind, at = read_uleb(data, at)
            form, at = read_uleb(data, at)
            formats.append((kind, form))
        entries, at = read_uleb(data, at)
        found: List[FileEntry] = []
        for _ in range(entries):
            name: Optional[bytes] = None
            directory = 0
            for kind, form in formats:
                value, at = self._value(form, at)
                if kind == DW_LNCT_PATH:
                    name = value
                elif kind == DW_LNCT_DIRECTORY_INDEX:
                    directory = value
            found.append(FileEntry(name if isinstance(name, bytes) else b"", directory))
        return found, at

    def _value(self, form: int, at: int):
        data = self._data
        if form == FORM_STRING:
            end = string_end(data, at)
            return bytes(data[at:end]), end + 1
        if form in (FORM_LINE_STRP, FORM_STRP):
            table = self._line_strings if form == FORM_LINE_STRP else self._strings
            offset = int.from_bytes(data[at:at + 4], "little")
            if table is None or offset >= len(table):
                raise UnsupportedDwarf("a string outside its section")
            return bytes(table[offset:string_end(table, offset)]), at + 4
        if form == FORM_UDATA:
            return read_uleb(data, at)
        if form == FORM_BLOCK:
            length, at = read_uleb(data, at)
            return None, at + length
        size = FORM_SIZES.get(form)
        if size is None:
            raise UnsupportedDwarf(f"line table form {form:#x}")
        return int.from_bytes(data[at:at + size], "little"), at + size
