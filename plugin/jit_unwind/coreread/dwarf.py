"""What GDB reads from DWARF for a frame: the function holding a pc with the functions
inlined there (DW_TAG_inlined_subroutine), and the file and line of each.

Decoded as a pc needs it: ``.debug_aranges`` names the compilation unit, its functions
are indexed (by ``dies.Skimmer``) only until the one holding the pc is found, only that
one is descended into, and the unit's line table (``lines``) is decoded only as far as
the pc.  pyelftools reads the sections and the headers, and entries the quick reader
does not understand."""

import bisect
from typing import Dict, List, Optional, Tuple

from ..file_cache import FileCache
from .sections import elf_file, read_aranges
from .symbols import file_symbols, separate_debug_file
from .units import SourceFrame, Unit

__all__ = ["DwarfFile", "SourceFrame", "source_frames"]


class DwarfFile:
    """The DWARF of one file (its own, or its separate debug file's): compilation units
    by address, decoded on first use."""

    def __init__(self, path: str):
        self._handle = open(path, "rb")  # kept for the file's life
        # Linked files: no relocations to apply (looking for them costs 50 ms a file).
        self.dwarf = elf_file(self._handle).get_dwarf_info(relocate_dwarf_sections=False,
                                                            follow_links=False)
        self._units: Dict[int, Optional[Unit]] = {}
        info, abbrevs = self.dwarf.debug_info_sec, self.dwarf.debug_abbrev_sec
        self._bytes: Dict[str, Optional[bytes]] = {}
        self._sections = (info.stream.getvalue(), abbrevs.stream.getvalue(), self._section) \
            if hasattr(info.stream, "getvalue") and abbrevs is not None else None
        section = self.dwarf.debug_aranges_sec
        self._ranges: List[Tuple[int, int, int]] = \
            read_aranges(section.stream.getvalue()) if section is not None else []
        self._starts = [item[0] for item in self._ranges]
        self._scanned = False  # the units .debug_aranges leaves out

    def _section(self, name: str) -> Optional[bytes]:
        """.debug_NAME's bytes (read on first use), None when the file has none."""
        if name not in self._bytes:
            section = getattr(self.dwarf, f"debug_{name}_sec", None)
            self._bytes[name] = section.stream.getvalue() if section is not None else None
        return self._bytes[name]

    def _unit_offset(self, address: int) -> Optional[int]:
        found = self._covering(address)
        if found is None and not self._scanned:
            # Units .debug_aranges leaves out (clang writes none): their own ranges, once.
            self._scanned = True
            listed = {item[2] for item in self._ranges}
            added = []
            for cu in self.dwarf.iter_CUs():
                if cu.cu_offset in listed:
                    continue
                unit = self._unit_at(cu.cu_offset, cu)
                if unit is not None:
                    added += [(low, high, cu.cu_offset) for low, high in unit.top.ranges]
            self._ranges = sorted(self._ranges + added)
            self._starts = [item[0] for item in self._ranges]
            found = self._covering(address)
        return found

    def _covering(self, address: int) -> Optional[int]:
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
