"""What GDB reads from DWARF for a frame: the function holding a pc with the functions
inlined there (DW_TAG_inlined_subroutine), and the file and line of each.

Decoded as a pc needs it: ``.debug_aranges`` names the compilation unit, its functions
are indexed (by ``dies.Skimmer``) only until the one holding the pc is found, only that
one is descended into, and the unit's line table (``lines``) is decoded only as far as
the pc.  pyelftools reads the sections and the headers, and entries the quick reader
does not understand."""

import bisect
import io
import os
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..file_cache import FileCache
from ..source_paths import shown_source_path
from .dies import Skimmer, Unsupported
from .lines import LineTable
from .symbols import file_symbols, separate_debug_file

MAX_DEPTH = 64  # inlined functions and blocks nested in one function
MAX_ORIGIN = 8  # DW_AT_abstract_origin / DW_AT_specification links followed
SCOPES = ("DW_TAG_inlined_subroutine", "DW_TAG_lexical_block")
WANTED = SCOPES + ("DW_TAG_subprogram",)


class SourceFrame(NamedTuple):
    """One function of a pc, as GDB lists it: its name, file and line (None unknown)."""

    name: Optional[str]
    filename: Optional[str]
    line: Optional[int]


def _shown_name(linkage: Optional[str], plain: Optional[str]) -> Optional[str]:
    """GDB prints a C function by its linkage name (``__GI_raise``); a mangled C++ one
    it demangles, which is not done here: its DWARF name instead."""
    if linkage and not linkage.startswith("_Z"):
        return linkage
    return plain or linkage


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class Node(NamedTuple):
    """A function or block entry: where it is, its ranges, its call site."""

    offset: int
    tag: str
    ranges: List[Tuple[int, int]]
    call_file: Optional[int]
    call_line: Optional[int]
    handle: object  # the walk's own entry (a Skimmer Entry or a pyelftools DIE)


class _Skimmed:
    """Entries read by :class:`dies.Skimmer` (fast)."""

    def __init__(self, unit: "Unit", sections: tuple):
        self.unit = unit
        self.skimmer = Skimmer(unit.cu, *sections)
        self._top = self.skimmer.entry(unit.cu.cu_die_offset, whole_unit=True)
        kept = self._top.attributes
        unit.comp_dir = self.skimmer.text(kept["DW_AT_comp_dir"]) \
            if "DW_AT_comp_dir" in kept else ""
        low = kept.get("DW_AT_low_pc")
        unit.base = low[1] if low is not None else 0
        stmt = kept.get("DW_AT_stmt_list")
        unit.stmt_list = stmt[1] if stmt is not None else None

    def name(self, offset: int) -> Optional[str]:
        """The name GDB prints for the function entry at ``offset`` (Unit.name)."""
        linkage = plain = None
        for _ in range(MAX_ORIGIN):
            kept = self.skimmer.entry(offset).attributes
            for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
                if key in kept and linkage is None:
                    linkage = self.skimmer.text(kept[key])
            if "DW_AT_name" in kept and plain is None:
                plain = self.skimmer.text(kept["DW_AT_name"])
            origin = kept.get("DW_AT_abstract_origin") or kept.get("DW_AT_specification")
            if origin is None:
                break
            offset = self.skimmer.reference(origin)
        return _shown_name(linkage, plain)

    def node(self, entry) -> Node:
        kept = entry.attributes
        low, high, ranges = (kept.get("DW_AT_low_pc"), kept.get("DW_AT_high_pc"),
                             kept.get("DW_AT_ranges"))
        if (low is not None and low[0] != "DW_FORM_addr") or (
                ranges is not None and ranges[0] != "DW_FORM_sec_offset"):
            raise Unsupported("indexed address or range list")
        found = self.unit.ranges_of(low and low[1], high and high[1],
                                    high is not None and high[0] == "DW_FORM_addr",
                                    ranges and ranges[1])
        call_file, call_line = kept.get("DW_AT_call_file"), kept.get("DW_AT_call_line")
        return Node(entry.offset, entry.tag, found, call_file and call_file[1],
                    call_line and call_line[1], entry)

    def top(self) -> Node:
        return self.node(self._top)

    def children(self, node: Node):
        return (self.node(entry) for entry in self.skimmer.children_iter(node.handle)
                if entry.tag in WANTED)

    def subprograms(self, top: Node):
        """The unit's top-level functions, one at a time (the index stops at the one a
        pc needs)."""
        for entry in self.skimmer.children_iter(top.handle):
            if entry.tag == "DW_TAG_subprogram":
                yield self.node(entry)


class _Parsed:
    """Entries parsed by pyelftools (every DWARF it reads)."""

    def __init__(self, unit: "Unit"):
        self.unit = unit
        top = unit.cu.get_top_DIE()
        comp_dir = top.attributes.get("DW_AT_comp_dir")
        unit.comp_dir = _text(comp_dir.value) if comp_dir is not None else ""
        unit.base = top.attributes["DW_AT_low_pc"].value \
            if "DW_AT_low_pc" in top.attributes else 0
        unit.stmt_list = None  # pyelftools finds it

    def name(self, offset: int) -> Optional[str]:
        return self.unit.parsed_name(offset)

    def node(self, die) -> Node:
        attributes = die.attributes
        low, high = attributes.get("DW_AT_low_pc"), attributes.get("DW_AT_high_pc")
        ranges = attributes.get("DW_AT_ranges")
        found = self.unit.ranges_of(low and low.value, high and high.value,
                                    high is not None and high.form == "DW_FORM_addr",
                                    ranges and ranges.value)
        call_file, call_line = (attributes.get("DW_AT_call_file"),
                                attributes.get("DW_AT_call_line"))
        return Node(die.offset, die.tag, found, call_file and call_file.value,
                    call_line and call_line.value, die)

    def top(self) -> Node:
        return self.node(self.unit.cu.get_top_DIE())

    def children(self, node: Node):
        return (self.node(die) for die in node.handle.iter_children() if die.tag in WANTED)

    def subprograms(self, top: Node):
        for die in top.handle.iter_children():
            if die.tag == "DW_TAG_subprogram":
                yield self.node(die)


class Unit:
    """One compilation unit: its subprograms by range, its line table, file names."""

    def __init__(self, dwarf, cu, sections: Optional[Tuple[bytes, bytes]]):
        self.dwarf = dwarf
        self.cu = cu
        self.comp_dir, self.base = "", 0
        self.stmt_list: Optional[int] = None
        self._lines: Optional[LineTable] = None
        self._program = None
        self._names: Dict[int, Optional[str]] = {}
        try:
            self.walk = _Skimmed(self, sections) if sections is not None else _Parsed(self)
            self._index()
        except Unsupported:
            self.walk = _Parsed(self)
            self._index()

    def _index(self) -> None:
        self.top = self.walk.top()
        self._pending = self.walk.subprograms(self.top)
        self.functions: List[Tuple[int, int, Node]] = []
        self._function_starts: List[int] = []

    def _function_at(self, address: int) -> Optional[Node]:
        """The subprogram holding ``address``: among those indexed, else indexing on
        until it is found (a unit's functions are passed at most once)."""
        index = bisect.bisect_right(self._function_starts, address) - 1
        for candidate in range(index, max(index - 8, -1), -1):
            low, high, node = self.functions[candidate]
            if low <= address < high:
                return node
        found = None
        for node in self._pending:
            for low, high in node.ranges:
                at = bisect.bisect_right(self._function_starts, low)
                self.functions.insert(at, (low, high, node))
                self._function_starts.insert(at, low)
            if any(low <= address < high for low, high in node.ranges):
                found = node  # aliases follow with the same range: GDB names the last
            elif found is not None:
                break
        return found

    def ranges_of(self, low: Optional[int], high: Optional[int], high_is_address: bool,
                  ranges: Optional[int]) -> List[Tuple[int, int]]:
        """[low, high) pairs from DW_AT_low_pc/high_pc or the range list at ``ranges``."""
        if low is not None:
            if high is None:
                return [(low, low + 1)]
            return [(low, high if high_is_address else low + high)]
        if ranges is None:
            return []
        lists = self.dwarf.range_lists()
        if lists is None:
            return []
        try:
            entries = lists.get_range_list_at_offset(ranges, cu=self.cu)
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
            # The unit's own entry gave the offset: pyelftools need not parse it again.
            self._program = self.dwarf.line_program_for_CU(self.cu) \
                if self.stmt_list is None else \
                self.dwarf._parse_line_program_at_offset(self.stmt_list, self.cu.structs)
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

    def name(self, offset: int) -> Optional[str]:
        """The function's name as GDB prints a C function: its linkage name where
        DWARF has one (``__GI_raise``), else its name; through abstract origins."""
        if offset not in self._names:
            try:
                self._names[offset] = self.walk.name(offset)
            except Unsupported:
                self._names[offset] = self.parsed_name(offset)
        return self._names[offset]

    def parsed_name(self, offset: int) -> Optional[str]:
        """Unit.name through pyelftools."""
        linkage = plain = None
        current = self.cu.get_DIE_from_refaddr(offset)
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
        return _shown_name(linkage, plain)

    def chain(self, address: int) -> List[Node]:
        """The subprogram holding ``address`` and the inlined subroutines there, outer
        first; [] when no function of this unit holds it."""
        try:
            return self._chain(address)
        except Unsupported:
            self.walk = _Parsed(self)
            self._index()
            return self._chain(address)

    def _chain(self, address: int) -> List[Node]:
        function = self._function_at(address)
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

    def _inner_scope(self, scope: Node, address: int, depth: int = 0) -> Optional[Node]:
        """The child block or inlined subroutine of ``scope`` holding ``address``
        (blocks without a range are looked into)."""
        for child in self.walk.children(scope):
            if child.tag not in SCOPES:
                continue
            if not child.ranges:
                if child.tag == "DW_TAG_lexical_block" and depth < MAX_DEPTH:
                    inner = self._inner_scope(child, address, depth + 1)
                    if inner is not None:
                        return inner
                continue
            if any(low <= address < high for low, high in child.ranges):
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
        for node in reversed(chain):
            frames.append(SourceFrame(self.name(node.offset), filename,
                                      line if filename else None))
            filename = self.file_name(node.call_file) if node.call_file is not None \
                else None
            line = node.call_line
        return frames


def read_aranges(data: bytes) -> List[Tuple[int, int, int]]:
    """(start, end, unit offset) of each range of ``.debug_aranges`` (32-bit DWARF,
    8-byte addresses; other sets are left out), sorted."""
    found = []
    at = 0
    while at + 12 <= len(data):
        length = int.from_bytes(data[at:at + 4], "little")
        if length == 0xFFFFFFFF:
            break  # 64-bit DWARF: the units are found without this table
        end = at + 4 + length
        unit = int.from_bytes(data[at + 6:at + 10], "little")
        address_size = data[at + 10]
        position = at + 12
        position += (-position) % 16  # tuples are aligned to twice the address size
        while address_size == 8 and position + 16 <= end:
            start = int.from_bytes(data[position:position + 8], "little")
            size = int.from_bytes(data[position + 8:position + 16], "little")
            position += 16
            if start == 0 and size == 0:
                break
            found.append((start, start + size, unit))
        at = end
    return sorted(found)


# Sections pyelftools reads (and decompresses) for its DWARF view that a pc's names and
# lines never need: variable locations, .debug_frame (the walk reads .eh_frame), indexes.
UNREAD = {".debug_loc", ".debug_loclists", ".debug_frame", ".eh_frame", ".debug_pubnames",
          ".debug_pubtypes", ".debug_types", ".debug_sup", ".gnu_debugaltlink"}


class _OnFirstRead:
    """A section's stream read (and decompressed) from the file when first used: most
    sections pyelftools opens are never looked at for a backtrace."""

    def __init__(self, section):
        self._section = section
        self._stream: Optional[io.BytesIO] = None

    def __getattr__(self, name):
        if self._stream is None:
            self._stream = io.BytesIO(self._section.data())  # shares the bytes read
        return getattr(self._stream, name)


def _elf_file(handle):
    """pyelftools' ELFFile whose DWARF sections are read when first used, the UNREAD
    ones never: libc's debug file holds megabytes of compressed location lists."""
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor
    from elftools.elf.elffile import ELFFile

    class Lean(ELFFile):
        def _read_dwarf_section(self, section, relocate_dwarf_sections):
            unread = section.name in UNREAD
            return DebugSectionDescriptor(
                stream=io.BytesIO() if unread else _OnFirstRead(section),
                name=section.name, global_offset=section["sh_offset"],
                size=0 if unread else section.data_size, address=section["sh_addr"])

    return Lean(handle)


class DwarfFile:
    """The DWARF of one file (its own, or its separate debug file's): compilation units
    by address, decoded on first use."""

    def __init__(self, path: str):
        self._handle = open(path, "rb")  # kept for the file's life
        # Linked files: no relocations to apply (looking for them costs 50 ms a file).
        self.dwarf = _elf_file(self._handle).get_dwarf_info(relocate_dwarf_sections=False,
                                                            follow_links=False)
        self._units: Dict[int, Optional[Unit]] = {}
        info, abbrevs = self.dwarf.debug_info_sec, self.dwarf.debug_abbrev_sec
        strings = {form: section.stream.getvalue() for form, section in (
            ("DW_FORM_strp", self.dwarf.debug_str_sec),
            ("DW_FORM_line_strp", self.dwarf.debug_line_str_sec)) if section is not None}
        self._sections = (info.stream.getvalue(), abbrevs.stream.getvalue(), strings) \
            if hasattr(info.stream, "getvalue") and abbrevs is not None else None
        section = self.dwarf.debug_aranges_sec
        self._ranges: Optional[List[Tuple[int, int, int]]] = None
        if section is not None:
            self._ranges = read_aranges(section.stream.getvalue())
        self._starts = [item[0] for item in self._ranges or ()]

    def _unit_offset(self, address: int) -> Optional[int]:
        if not self._ranges:  # no .debug_aranges: every unit's ranges, once
            found = []
            for cu in self.dwarf.iter_CUs():
                unit = self._unit_at(cu.cu_offset, cu)
                if unit is not None:
                    found += [(low, high, cu.cu_offset) for low, high in unit.top.ranges]
            self._ranges = sorted(found)
            self._starts = [item[0] for item in self._ranges]
        index = bisect.bisect_right(self._starts, address) - 1
        for candidate in range(index, max(index - 8, -1), -1):
            low, high, offset = self._ranges[candidate]
            if low <= address < high:
                return offset
        return None

    def _unit_at(self, offset: int, cu=None) -> Optional[Unit]:
        if offset not in self._units:
            try:
                self._units[offset] = Unit(self.dwarf, cu or self.dwarf.get_CU_at(offset),
                                           self._sections)
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
