"""What GDB reads from DWARF for a frame: the function holding a pc with the functions
inlined there (DW_TAG_inlined_subroutine), and the file and line of each.

Decoded as a pc needs it: ``.debug_aranges`` names the compilation unit, its functions
are indexed (by ``dies.Skimmer``) only until the one holding the pc is found, only that
one is descended into, and the unit's line table (``lines``) is decoded only as far as
the pc.  Sections, headers and range lists are read with struct (``sections``,
``headers``, ``ranges``); pyelftools only where the quick reader meets what it does not
understand."""

import bisect
from typing import Dict, List, Optional, Tuple

from ..elf.pyelftools_errors import pyelftools_errors
from ..file_cache import FileCache
from .sections import DebugSections, read_aranges
from .symbols import file_symbols, separate_debug_file
from .frame_cache import FrameCache
from .units import RawFrame, SourceFrame, Unit, source_frame

__all__ = ["DwarfFile", "SourceFrame", "source_frames"]


class DwarfFile:
    """The DWARF of one file (its own, or its separate debug file's): compilation units
    by address, decoded on first use."""

    def __init__(self, path: str):
        self.sections = DebugSections(path)
        self._units: Dict[int, Optional[Unit]] = {}
        aranges = self.sections.get("aranges")
        self._ranges: List[Tuple[int, int, int]] = read_aranges(aranges) if aranges else []
        self._starts = [item[0] for item in self._ranges]
        self._scanned = False  # the units .debug_aranges leaves out

    @property
    def has_debug_info(self) -> bool:
        return self.sections.has("info")

    def _unit_offset(self, address: int) -> Optional[int]:
        found = self._covering(address)
        if found is None and not self._scanned:
            # Units .debug_aranges leaves out (clang writes none): their own ranges, once.
            self._scanned = True
            listed = {item[2] for item in self._ranges}
            added = []
            for offset in self._all_units():
                if offset in listed:
                    continue
                unit = self._unit_at(offset)
                if unit is not None:
                    added += [(low, high, offset) for low, high in unit.top.ranges]
            self._ranges = sorted(self._ranges + added)
            self._starts = [item[0] for item in self._ranges]
            found = self._covering(address)
        return found

    def _all_units(self) -> List[int]:
        try:
            return self.sections.unit_offsets()
        except ValueError:  # 64-bit DWARF
            return [cu.cu_offset for cu in self.sections.pyelftools_dwarf().iter_CUs()]

    def _covering(self, address: int) -> Optional[int]:
        index = bisect.bisect_right(self._starts, address) - 1
        for candidate in range(index, max(index - 8, -1), -1):
            low, high, offset = self._ranges[candidate]
            if low <= address < high:
                return offset
        return None

    def _unit_at(self, offset: int) -> Optional[Unit]:
        if offset not in self._units:
            try:
                self._units[offset] = Unit(self.sections, offset)
            # A unit neither reader can read; ImportError: no pyelftools for what the
            # quick reader leaves to it (needed_pyelftools says so after the stacks).
            except pyelftools_errors(ImportError):
                self._units[offset] = None
        return self._units[offset]

    def raw_frames(self, address: int) -> List[RawFrame]:
        """The functions at file address ``address``, innermost first; [] when DWARF
        does not cover it."""
        offset = self._unit_offset(address)
        unit = self._unit_at(offset) if offset is not None else None
        if unit is None:
            return []
        try:
            return unit.raw_frames(address)
        # DWARF neither reader can decode (or no pyelftools for it): the symbol tables'
        # name stands.
        except pyelftools_errors(ImportError):
            return []


class _Answers:
    """One file's DWARF behind the answers kept on disk (``frame_cache``): the DWARF
    is opened only for a pc not kept."""

    def __init__(self, path: str, dwarf: Optional[DwarfFile]):
        self.path = path
        self._dwarf = dwarf
        self.kept = FrameCache(path)

    def frames(self, address: int) -> List[SourceFrame]:
        kept = self.kept.get(address)
        if kept is not None:
            try:
                return [source_frame(raw) for raw in kept]
            except (TypeError, ValueError):  # not what this reader writes
                pass
        if self._dwarf is None:
            self._dwarf = DwarfFile(self.path)
        raw = self._dwarf.raw_frames(address)
        self.kept.put(address, raw)
        return [source_frame(item) for item in raw]


def _open(path: str) -> Optional[_Answers]:
    symbols = file_symbols(path)
    if symbols is None:
        return None
    debug = path if symbols.has_dwarf else separate_debug_file(path)
    if debug is None:
        return None
    answers = _Answers(debug, None)
    if answers.kept.loaded:
        return answers  # its DWARF was read before: opened only if a new pc needs it
    found = DwarfFile(debug)
    if not found.has_debug_info:
        return None
    answers._dwarf = found
    return answers


_files: FileCache[Optional[_Answers]] = FileCache(64)
def source_frames(path: str, file_address: int) -> List[SourceFrame]:
    """The functions (inlined ones first) at ``file_address`` of mapped file ``path``,
    from its DWARF; [] without."""
    found = _files.get(path, _open, None)
    return found.frames(file_address) if found is not None else []
