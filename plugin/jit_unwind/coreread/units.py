"""One compilation unit's functions as GDB lists them at a pc: the subprogram, the
inlined subroutines there (outer first), their names (C linkage names, as GDB prints
them), files and lines.  Entries come from ``dies.Skimmer`` where it can read them, else
from pyelftools."""

import bisect
import os
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

from ..elf.pyelftools_errors import pyelftools_errors
from ..elf.source_paths import shown_source_path
from .dies import ADDRX, Skimmer, UnsupportedDwarf
from .headers import LineProgram, UnitHeader
from .lines import LineTable
from .ranges import ranges_v4, ranges_v5

MAX_DEPTH = 64  # inlined functions and blocks nested in one function
MAX_ORIGIN = 8  # DW_AT_abstract_origin / DW_AT_specification links followed
SCOPES = ("DW_TAG_inlined_subroutine", "DW_TAG_lexical_block")
WANTED = SCOPES + ("DW_TAG_subprogram",)
SUBPROGRAM = ("DW_TAG_subprogram",)


class SourceFrame(NamedTuple):
    """One function of a pc, as GDB lists it: its name, file and line (None unknown)."""

    name: Optional[str]
    filename: Optional[str]
    line: Optional[int]


SourceFile = Tuple[str, str]  # the line table's name, the full path made of it
RawFrame = Tuple[Optional[str], Optional[SourceFile], Optional[int]]


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
    handle: Any  # the walk's own entry (a Skimmer Entry or a pyelftools DIE)


class _Skimmed:
    """Entries read by :class:`dies.Skimmer` (fast)."""

    def __init__(self, unit: "Unit", sections: tuple):
        self.unit = unit
        self.skimmer = Skimmer(unit.cu, *sections)
        top = self.skimmer.entry(unit.cu.cu_die_offset, whole_unit=True)
        if top is None:
            raise UnsupportedDwarf("a null unit entry")
        self._top = top
        kept = top.attributes
        self.skimmer.set_bases(kept)
        unit.comp_dir = self.skimmer.text(kept["DW_AT_comp_dir"]) \
            if "DW_AT_comp_dir" in kept else ""
        low = kept.get("DW_AT_low_pc")
        unit.base = self.skimmer.address(low) if low is not None else 0
        stmt = kept.get("DW_AT_stmt_list")
        unit.stmt_list = stmt[1] if stmt is not None else None

    def name(self, offset: int) -> Optional[str]:
        """The name GDB prints for the function entry at ``offset`` (Unit.name)."""
        linkage = plain = None
        for _ in range(MAX_ORIGIN):
            entry = self.skimmer.entry(offset)
            if entry is None:
                raise UnsupportedDwarf("a reference to a null entry")
            kept = entry.attributes
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
        high_is_address = high is not None and (high[0] == "DW_FORM_addr"
                                                 or high[0] in ADDRX)
        found = self.unit.ranges_of(
            self.skimmer.address(low) if low is not None else None,
            (self.skimmer.address(high) if high_is_address else high[1])
            if high is not None else None,
            high_is_address, self.skimmer.range_list(ranges) if ranges is not None else None)
        call_file, call_line = kept.get("DW_AT_call_file"), kept.get("DW_AT_call_line")
        return Node(entry.offset, entry.tag, found, call_file and call_file[1],
                    call_line and call_line[1], entry)

    def top(self) -> Node:
        return self.node(self._top)

    def children(self, node: Node):
        return (self.node(entry) for entry in self.skimmer.children_iter(node.handle,
                                                                         WANTED))

    def subprograms(self, top: Node):
        """The unit's top-level functions, one at a time (the index stops at the one a
        pc needs); None for a declaration, which has no range and is not read."""
        for entry in self.skimmer.children_iter(top.handle, SUBPROGRAM, ranged=True):
            yield self.node(entry) if entry is not None else None


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
    """One compilation unit: its subprograms by range, its line table, file names.
    Read with struct (``headers``, ``dies``, ``ranges``); a unit with anything those do
    not decode is read by pyelftools instead, whole."""

    def __init__(self, sections, offset: int):
        self.sections = sections  # sections.DebugSections
        self.offset = offset
        self.comp_dir, self.base = "", 0
        self.stmt_list: Optional[int] = None
        self._lines: Optional[LineTable] = None
        self._program = None
        self._names: Dict[int, Optional[str]] = {}
        self._files: Dict[int, Optional[SourceFile]] = {}
        # headers.UnitHeader; pyelftools' CompileUnit when it reads the unit (_Parsed)
        self.cu: Any
        self.walk: Union[_Skimmed, _Parsed]
        try:
            info, abbrevs = sections.unit_bytes(offset), sections.prefix("abbrev", 0)
            if info is None or abbrevs is None:
                raise UnsupportedDwarf("no .debug_info or .debug_abbrev")
            self.cu = UnitHeader(info, offset)
            self.walk = _Skimmed(self, (info, abbrevs, sections.get,
                                        lambda end: sections.prefix("abbrev", end)))
            self._index()
        except UnsupportedDwarf:
            self._use_pyelftools()

    def _use_pyelftools(self) -> None:
        self.cu = self.sections.pyelftools_dwarf().get_CU_at(self.offset)
        self._program = None
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
            if node is None:  # a function without a range (a declaration)
                if found is not None:
                    break
                continue
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
        if isinstance(self.walk, _Skimmed):
            return self._raw_ranges(ranges, self.walk.skimmer)
        return self._parsed_ranges(ranges)

    def _raw_ranges(self, offset: int, skimmer: Skimmer) -> List[Tuple[int, int]]:
        """As pyelftools picks the section: the one the file has, else by version."""
        old, new = self.sections.get("ranges"), self.sections.get("rnglists")
        try:
            if old is not None and (new is None or self.cu.version < 5):
                return ranges_v4(old, offset, self.base)
            if new is not None:
                return ranges_v5(new, offset, self.base, lambda index: skimmer._indexed(
                    "addr", "DW_AT_addr_base", index, 8))
        except (IndexError, ValueError) as error:
            raise UnsupportedDwarf(f"range list at {offset:#x}") from error
        return []

    def _parsed_ranges(self, offset: int) -> List[Tuple[int, int]]:
        lists = self.sections.pyelftools_dwarf().range_lists()
        if lists is None:
            return []
        try:
            entries = lists.get_range_list_at_offset(offset, cu=self.cu)
        except pyelftools_errors():  # a range list pyelftools cannot read: no range
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
            self._program = self._read_program()
        return self._program

    def _read_program(self):
        if self.stmt_list is not None:  # the unit's own entry gave the offset
            line = self.sections.line_bytes(self.stmt_list)
            try:
                if line is not None:
                    return LineProgram(line, self.stmt_list, self.sections.get("str"),
                                       self.sections.get("line_str"))
            except (UnsupportedDwarf, IndexError, ValueError):
                pass
            dwarf = self.sections.pyelftools_dwarf()
            return dwarf._parse_line_program_at_offset(
                self.stmt_list, dwarf.get_CU_at(self.offset).structs)
        if isinstance(self.walk, _Skimmed):  # its unit entry has no DW_AT_stmt_list
            return None
        return self.sections.pyelftools_dwarf().line_program_for_CU(self.cu)

    def lines(self) -> Optional[LineTable]:
        if self._lines is None and self.program() is not None:
            self._lines = LineTable(self.program())
        return self._lines

    def source_file(self, index: int) -> Optional[SourceFile]:
        """File ``index`` of the line table: its name there and the full path GDB
        makes of it (before it looks for the file: ``shown_file``)."""
        if index not in self._files:
            self._files[index] = self._source_file(index)
        return self._files[index]

    def _source_file(self, index: int) -> Optional[SourceFile]:
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
        return filename, full

    def name(self, offset: int) -> Optional[str]:
        """The function's name as GDB prints a C function: its linkage name where
        DWARF has one (``__GI_raise``), else its name; through abstract origins."""
        if offset not in self._names:
            try:
                self._names[offset] = self.walk.name(offset)
            except UnsupportedDwarf:
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
            except pyelftools_errors():  # a reference pyelftools cannot follow
                break
        return _shown_name(linkage, plain)

    def chain(self, address: int) -> List[Node]:
        """The subprogram holding ``address`` and the inlined subroutines there, outer
        first; [] when no function of this unit holds it."""
        try:
            return self._chain(address)
        except UnsupportedDwarf:
            self._use_pyelftools()
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

    def raw_frames(self, address: int) -> List[RawFrame]:
        """The functions at ``address``, innermost first, their files as the line
        table names them (``source_frame`` makes them SourceFrames)."""
        chain = self.chain(address)
        if not chain:
            return []
        lines = self.lines()
        row = lines.row_at(address) if lines is not None else None
        source = self.source_file(row[0]) if row is not None else None
        line = row[1] if row is not None else None
        frames: List[RawFrame] = []
        for node in reversed(chain):
            frames.append((self.name(node.offset), source,
                           line if source is not None else None))
            source = self.source_file(node.call_file) if node.call_file is not None \
                else None
            line = node.call_line
        return frames


def shown_file(source: Optional[SourceFile]) -> Optional[str]:
    """The path shown for a line table's file (as GDB's symtab's filename and fullname
    make it): a source found on disk by its real path."""
    if source is None:
        return None
    filename, full = source
    if os.path.exists(full):  # GDB's fullname of a source it finds is its real path
        full = os.path.realpath(full)
    return shown_source_path(filename, full)


def source_frame(raw: RawFrame) -> SourceFrame:
    name, source, line = raw
    return SourceFrame(name, shown_file(source), line)
