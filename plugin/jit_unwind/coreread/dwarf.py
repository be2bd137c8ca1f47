"""What GDB reads from DWARF for a frame: the function holding a pc with the functions
inlined there (DW_TAG_inlined_subroutine), and the file and line of each.

Decoded as a pc needs it (pyelftools): ``.debug_aranges`` names the compilation unit,
its subprograms are indexed once, only the one holding the pc is descended into, and
the unit's line table is decoded once, keeping only what GDB's own table keeps."""

import bisect
import os
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..file_cache import FileCache
from ..source_paths import shown_source_path
from .lines import LineTable
from .symbols import file_symbols, separate_debug_file

MAX_DEPTH = 64  # inlined functions and blocks nested in one function
MAX_ORIGIN = 8  # DW_AT_abstract_origin / DW_AT_specification links followed
SCOPES = ("DW_TAG_inlined_subroutine", "DW_TAG_lexical_block")


class SourceFrame(NamedTuple):
    """One function of a pc, as GDB lists it: its name, file and line (None unknown)."""

    name: Optional[str]
    filename: Optional[str]
    line: Optional[int]


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class Unit:
    """One compilation unit: its subprograms by range, its line table, file names."""

    def __init__(self, dwarf, cu):
        self.dwarf = dwarf
        self.cu = cu
        top = cu.get_top_DIE()
        self.top = top
        comp_dir = top.attributes.get("DW_AT_comp_dir")
        self.comp_dir = _text(comp_dir.value) if comp_dir is not None else ""
        self.base = top.attributes["DW_AT_low_pc"].value \
            if "DW_AT_low_pc" in top.attributes else 0
        self._lines: Optional[LineTable] = None
        self._program = None
        self._names: Dict[int, Optional[str]] = {}
        functions = []
        for child in top.iter_children():
            if child.tag == "DW_TAG_subprogram":
                for low, high in self.ranges(child):
                    functions.append((low, high, child))
        functions.sort(key=lambda item: item[0])
        self.functions = functions
        self._function_starts = [item[0] for item in functions]

    def ranges(self, die) -> List[Tuple[int, int]]:
        attributes = die.attributes
        low = attributes.get("DW_AT_low_pc")
        if low is not None:
            high = attributes.get("DW_AT_high_pc")
            if high is None:
                return [(low.value, low.value + 1)]
            end = high.value if high.form == "DW_FORM_addr" else low.value + high.value
            return [(low.value, end)]
        if "DW_AT_ranges" not in attributes:
            return []
        lists = self.dwarf.range_lists()
        if lists is None:
            return []
        try:
            entries = lists.get_range_list_at_offset(attributes["DW_AT_ranges"].value,
                                                     cu=self.cu)
        except Exception:  # a range list pyelftools cannot read: no range
            return []
        found, base = [], self.base
        for entry in entries:
            if hasattr(entry, "base_address"):
                base = entry.base_address
            elif getattr(entry, "is_absolute", False):
                found.append((entry.begin_offset, entry.end_offset))
            else:
                found.append((base + entry.begin_offset, base + entry.end_offset))
        return found

    def program(self):
        if self._program is None:
            self._program = self.dwarf.line_program_for_CU(self.cu)
        return self._program

    def lines(self) -> Optional[LineTable]:
        if self._lines is None and self.program() is not None:
            self._lines = LineTable(self.program())
        return self._lines

    def file_name(self, index: int) -> Optional[str]:
        """The path shown for file ``index`` of the line table (as GDB's symtab's
        filename and fullname make it)."""
        program = self.program()
        if program is None:
            return None
        header = program.header
        version5 = header["version"] >= 5
        entries = header["file_entry"]
        position = index if version5 else index - 1
        if not 0 <= position < len(entries):
            return None
        entry = entries[position]
        name = _text(entry.name)
        directories = header["include_directory"]
        directory = None
        if version5 and entry.dir_index < len(directories):
            directory = _text(directories[entry.dir_index])
        elif not version5 and 1 <= entry.dir_index <= len(directories):
            directory = _text(directories[entry.dir_index - 1])
        filename = name if os.path.isabs(name) or not directory \
            else os.path.join(directory, name)
        full = filename if os.path.isabs(filename) else os.path.join(self.comp_dir, filename)
        return shown_source_path(filename, full)

    def name(self, die) -> Optional[str]:
        """The function's name as GDB prints a C function: its linkage name where
        DWARF has one (``__GI_raise``), else its name; through abstract origins."""
        if die.offset in self._names:
            return self._names[die.offset]
        linkage = plain = None
        current = die
        for _ in range(MAX_ORIGIN):
            attributes = current.attributes
            for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
                if key in attributes and linkage is None:
                    linkage = _text(attributes[key].value)
            if "DW_AT_name" in attributes and plain is None:
                plain = _text(attributes["DW_AT_name"].value)
            origin = next((attributes[key] for key in ("DW_AT_abstract_origin",
                                                       "DW_AT_specification")
                           if key in attributes), None)
            if origin is None:
                break
            try:
                current = current.get_DIE_from_attribute(origin.name)
            except Exception:  # a reference pyelftools cannot follow
                break
        self._names[die.offset] = found = linkage or plain
        return found

    def chain(self, address: int) -> list:
        """The subprogram holding ``address`` and the inlined subroutines there, outer
        first; [] when no function of this unit holds it."""
        index = bisect.bisect_right(self._function_starts, address) - 1
        function = None
        for candidate in range(index, max(index - 8, -1), -1):
            low, high, die = self.functions[candidate]
            if low <= address < high:
                function = die
                break
        if function is None:
            return []
        chain = [function]
        scope = function
        for _ in range(MAX_DEPTH):
            inner = self._inner_scope(scope, address)
            if inner is None:
                break
            if inner.tag == "DW_TAG_inlined_subroutine":
                chain.append(inner)
            scope = inner
        return chain

    def _inner_scope(self, scope, address: int):
        """The child block or inlined subroutine of ``scope`` holding ``address``
        (blocks without a range are looked into)."""
        for child in scope.iter_children():
            if child.tag not in SCOPES:
                continue
            ranges = self.ranges(child)
            if not ranges:
                if child.tag == "DW_TAG_lexical_block" and child.has_children:
                    inner = self._inner_scope(child, address)
                    if inner is not None:
                        return inner
                continue
            if any(low <= address < high for low, high in ranges):
                return child
        return None

    def frames(self, address: int) -> List[SourceFrame]:
        chain = self.chain(address)
        if not chain:
            return []
        lines = self.lines()
        row = lines.row_at(address) if lines is not None else None
        filename = self.file_name(row[0]) if row is not None else None
        line = row[1] if row is not None else None
        frames = []
        for die in reversed(chain):
            frames.append(SourceFrame(self.name(die), filename, line if filename else None))
            call_file = die.attributes.get("DW_AT_call_file")
            call_line = die.attributes.get("DW_AT_call_line")
            filename = self.file_name(call_file.value) if call_file is not None else None
            line = call_line.value if call_line is not None else None
        return frames


class DwarfFile:
    """The DWARF of one file (its own, or its separate debug file's): compilation units
    by address, decoded on first use."""

    def __init__(self, path: str):
        from elftools.elf.elffile import ELFFile
        self._handle = open(path, "rb")  # kept for the file's life
        self.dwarf = ELFFile(self._handle).get_dwarf_info(follow_links=False)
        self._units: Dict[int, Optional[Unit]] = {}
        aranges = self.dwarf.get_aranges()
        self._aranges = aranges
        self._ranges: Optional[List[Tuple[int, int, int]]] = None

    def _unit_offset(self, address: int) -> Optional[int]:
        if self._aranges is not None:
            try:
                return self._aranges.cu_offset_at_addr(address)
            except Exception:
                pass
        if self._ranges is None:  # no .debug_aranges: every unit's ranges, once
            found = []
            for cu in self.dwarf.iter_CUs():
                unit = self._unit_at(cu.cu_offset, cu)
                if unit is not None:
                    found += [(low, high, cu.cu_offset) for low, high in unit.ranges(unit.top)]
            self._ranges = sorted(found)
        for low, high, offset in self._ranges:
            if low <= address < high:
                return offset
        return None

    def _unit_at(self, offset: int, cu=None) -> Optional[Unit]:
        if offset not in self._units:
            try:
                self._units[offset] = Unit(self.dwarf, cu or self.dwarf.get_CU_at(offset))
            except Exception:  # a unit pyelftools cannot read
                self._units[offset] = None
        return self._units[offset]

    def frames(self, address: int) -> List[SourceFrame]:
        """The functions at file address ``address``, innermost first; [] when DWARF
        does not cover it."""
        offset = self._unit_offset(address)
        unit = self._unit_at(offset) if offset is not None else None
        if unit is None:
            return []
        try:
            return unit.frames(address)
        except Exception:  # DWARF pyelftools cannot decode: the symbol tables' name
            return []


def _open(path: str) -> Optional[DwarfFile]:
    symbols = file_symbols(path)
    if symbols is None:
        return None
    debug = path if symbols.has_dwarf else separate_debug_file(path)
    if debug is None:
        return None
    found = DwarfFile(debug)
    return found if found.dwarf.has_debug_info else None


_files: FileCache[Optional[DwarfFile]] = FileCache(64)


def source_frames(path: str, file_address: int) -> List[SourceFrame]:
    """The functions (inlined ones first) at ``file_address`` of mapped file ``path``,
    from its DWARF; [] without."""
    found = _files.get(path, _open, None)
    return found.frames(file_address) if found is not None else []
