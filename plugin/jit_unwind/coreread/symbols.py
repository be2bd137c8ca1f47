"""Function symbols of the files a core maps (.symtab, else .dynsym; read with struct),
their load bias, and the separate debug file GDB would read for each (build id, then
``.gnu_debuglink``)."""

import bisect
import itertools
import struct
from typing import Dict, List, Optional, Tuple

from ..elf import debug_files
from ..file_cache import FileCache
from ..elf.rawelf import RawElf
from .image import CoreImage

STT_FUNC, STT_GNU_IFUNC = 2, 10
_SYMBOL = struct.Struct("<IBBHQQ")
_FUNCTION_MASK = bytes(kind & 0xF in (STT_FUNC, STT_GNU_IFUNC) for kind in range(256))


class FileSymbols:
    """One file's functions: (start, end, name), sorted by start; its first PT_LOAD's
    address; its build id and debug link."""

    def __init__(self, path: str):
        with open(path, "rb") as handle:
            elf = RawElf(handle, path)
            self.first_vaddr = min((vaddr for vaddr, _ in elf.loads), default=None)
            self.has_dwarf = ".debug_info" in elf.sections
            self.build_id = debug_files.build_id(elf)
            self.debug_link = debug_files.debug_link(elf)
        self._path = path
        self._entries: Optional[List[Tuple[int, int, int]]] = None

    def _read_functions(self) -> List[Tuple[int, int, int]]:
        """The function symbols, read when first asked for (a file's load bias and
        debug file need only its headers)."""
        entries: List[Tuple[int, int, int]] = []
        self._names = b""
        try:
            with open(self._path, "rb") as handle:
                elf = RawElf(handle, self._path)
                for table, strings in ((".symtab", ".strtab"), (".dynsym", ".dynstr")):
                    entries, self._names = _functions(elf, table, strings)
                    if entries:
                        break
        except (OSError, ValueError):  # the file went away or changed since
            entries = []
        entries.sort()
        self._entries = entries
        self._starts = [entry[0] for entry in entries]
        return entries

    @property
    def entries(self) -> List[Tuple[int, int, int]]:
        """(start, end, where the name is in the names), sorted by start."""
        if self._entries is None:
            return self._read_functions()
        return self._entries

    @property
    def starts(self) -> List[int]:
        if self._entries is None:
            self._read_functions()
        return self._starts

    def function(self, file_address: int) -> Optional[Tuple[int, str]]:
        """(start, name) of the function holding ``file_address``."""
        entries = self.entries
        index = bisect.bisect_right(self._starts, file_address) - 1
        for candidate in range(index, max(index - 16, -1), -1):  # sizes may nest
            start, end, name_at = entries[candidate]
            if start <= file_address < end:
                name_end = self._names.find(b"\0", name_at)
                return start, self._names[name_at:name_end].decode("utf-8", "replace")
        return None


def _functions(elf: RawElf, table: str, strings: str) -> Tuple[List[Tuple[int, int, int]],
                                                                bytes]:
    """The function symbols of ``table`` (names decoded when asked for) and its names."""
    section, names = elf.sections.get(table), elf.sections.get(strings)
    if section is None or names is None:
        return [], b""
    data = section.data()
    data = data[:len(data) - len(data) % _SYMBOL.size]
    # Only the functions' entries are unpacked into tuples: their st_info bytes (every
    # 24th byte, from the 5th) say which (most of a large .symtab are not functions).
    is_function = data[4::_SYMBOL.size].translate(_FUNCTION_MASK)
    entries = [(value, value + (size or 1), name_at)
               for name_at, _info, _other, shndx, value, size in itertools.compress(
                   _SYMBOL.iter_unpack(data), is_function)
               if value and shndx]
    return entries, names.data()


_symbols: FileCache[Optional[FileSymbols]] = FileCache()


def file_symbols(path: str) -> Optional[FileSymbols]:
    return _symbols.get(path, FileSymbols, None)


def separate_debug_file(path: str) -> Optional[str]:
    """Where GDB finds ``path``'s debug info when the file has none of its own:
    /usr/lib/debug/.build-id/xx/yyy.debug, else the file its .gnu_debuglink names (beside
    it, in .debug/ there, or under /usr/lib/debug)."""
    symbols = file_symbols(path)
    if symbols is None:
        return None
    return debug_files.separate_debug_file(path, symbols.build_id, symbols.debug_link)


class Symbolizer:
    """Function symbols of the mapped ELF files (address -> name and start).
    ``debug_files``: also the separate debug files' .symtab (as GDB reads them)."""

    def __init__(self, image: CoreImage, debug_files: bool = True):
        self.image = image
        self.debug_files = debug_files
        self._bias: Dict[str, Optional[int]] = {}
        self._files: Dict[str, list] = {}  # path -> its tables, found once per core

    def bias(self, path: str) -> Optional[int]:
        """Load bias of ``path``: its offset-0 mapping minus its first PT_LOAD's page."""
        if path not in self._bias:
            bias = None
            first = min((f for f in self.image.files if f.path == path),
                        key=lambda f: f.offset, default=None)
            symbols = file_symbols(path)
            vaddr = symbols.first_vaddr if symbols is not None else None
            if first is not None and first.offset == 0 and vaddr is not None:
                bias = first.start - (vaddr & ~0xFFF)
            self._bias[path] = bias
        return self._bias[path]

    def file_address(self, address: int) -> Optional[Tuple[str, int]]:
        mapping = self.image.file_at(address)
        if mapping is None or not mapping.path.startswith("/"):
            return None
        bias = self.bias(mapping.path)
        return None if bias is None else (mapping.path, address - bias)

    def _tables(self, path: str) -> list:
        tables = self._files.get(path)
        if tables is None:
            symbols = file_symbols(path)
            tables = [symbols] if symbols is not None else []
            if symbols is not None and self.debug_files and not symbols.has_dwarf:
                debug = separate_debug_file(path)
                found = file_symbols(debug) if debug else None
                if found is not None:
                    tables.append(found)
            self._files[path] = tables
        return tables

    def function(self, address: int) -> Optional[Tuple[int, str]]:
        """(run-time start, name) of the function holding ``address``."""
        located = self.file_address(address)
        if located is None:
            return None
        path, file_address = located
        for table in self._tables(path):
            found = table.function(file_address)
            if found is not None:
                return found[0] + self.bias(path), found[1]
        return None
