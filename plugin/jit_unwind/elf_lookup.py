"""Find symbols and sections of mapped ELF files without a debugger's help.

Used where asking the debugger is slow or unsafe (inside an unwinder, a symbol lookup
through the expression evaluator may need the very frame being unwound) or impossible
(a stripped CPython keeps ``_PyRuntime`` in its own ``.PyRuntime`` section).  The
mappings say where each file is loaded.
"""

import struct
from typing import Dict, Iterable, Optional, Tuple

from .file_cache import FileCache, file_identity
from .rawelf import RawElf, first_mappings, load_bias
from .model import Mapping

_have_pyelftools: Optional[bool] = None


def have_pyelftools() -> bool:
    """Whether pyelftools can be imported (DWARF and core files need it; the look-ups
    here do not)."""
    global _have_pyelftools
    if _have_pyelftools is None:
        try:
            from elftools.elf.elffile import ELFFile  # noqa: F401
            _have_pyelftools = True
        except ImportError:
            _have_pyelftools = False
    return _have_pyelftools


_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size


class ExportTable:
    """A file's exported symbols, found through its hash table (.gnu.hash, else .hash)
    with struct: a few reads per name.  pyelftools took a second per first stop of a
    JVM (its import, then every section header of the ~40 mapped files)."""

    def __init__(self, path: str):
        self._handle = open(path, "rb")  # kept for later lookups
        try:
            elf = RawElf(self._handle, path)
        except Exception:
            self._handle.close()
            raise
        self.loads = elf.loads
        sections = elf.sections
        self._symbols, self._strings = sections.get(".dynsym"), sections.get(".dynstr")
        self._gnu, self._sysv = sections.get(".gnu.hash"), sections.get(".hash")
        self._tables: Optional[tuple] = None

    def close(self) -> None:
        self._handle.close()

    def _read(self, offset: int, size: int) -> bytes:
        self._handle.seek(offset)
        data = self._handle.read(size)
        if len(data) != size:
            raise ValueError("truncated ELF file")
        return data

    def _symbol(self, index: int, name: bytes) -> Optional[int]:
        """st_value of the defined symbol ``index`` if it is named ``name``."""
        string, _info, _other, shndx, value, _size = _SYMBOL.unpack(self._read(
            self._symbols["sh_offset"] + index * _SYMBOL.size, _SYMBOL.size))
        if not value or not shndx:  # undefined
            return None
        wanted = name + b"\0"
        if self._read(self._strings["sh_offset"] + string, len(wanted)) != wanted:
            return None
        return value

    def value(self, name: str) -> Optional[int]:
        """The link-time value of the defined exported symbol ``name``, or None."""
        if self._symbols is None or self._strings is None:
            return None
        encoded = name.encode()
        if self._gnu is not None:
            return self._gnu_lookup(encoded)
        if self._sysv is not None:
            return self._sysv_lookup(encoded)
        return None

    def _gnu_lookup(self, name: bytes) -> Optional[int]:
        if self._tables is None:
            offset = self._gnu["sh_offset"]
            buckets, first, bloom_size, shift = struct.unpack(
                "<IIII", self._read(offset, 16))
            bloom = struct.unpack(f"<{bloom_size}Q", self._read(offset + 16, bloom_size * 8))
            table = struct.unpack(f"<{buckets}I",
                                  self._read(offset + 16 + bloom_size * 8, buckets * 4))
            chains = offset + 16 + bloom_size * 8 + buckets * 4
            self._tables = (first, shift, bloom, table, chains)
        first, shift, bloom, table, chains = self._tables
        if not table or not bloom:
            return None
        hashed = 5381
        for byte in name:
            hashed = (hashed * 33 + byte) & 0xFFFFFFFF
        word = bloom[(hashed // 64) % len(bloom)]
        mask = (1 << (hashed % 64)) | (1 << ((hashed >> shift) % 64))
        if word & mask != mask:
            return None
        index = table[hashed % len(table)]
        if index < first:
            return None
        for _ in range(1 << 16):  # a chain ends at a hash with its low bit set
            chained = struct.unpack("<I", self._read(chains + (index - first) * 4, 4))[0]
            if (chained | 1) == (hashed | 1):
                value = self._symbol(index, name)
                if value is not None:
                    return value
            if chained & 1:
                return None
            index += 1
        return None

    def _sysv_lookup(self, name: bytes) -> Optional[int]:
        offset = self._sysv["sh_offset"]
        buckets, chains = struct.unpack("<II", self._read(offset, 8))
        if not buckets:
            return None
        hashed = 0
        for byte in name:
            hashed = ((hashed << 4) + byte) & 0xFFFFFFFF
            high = hashed & 0xF0000000
            if high:
                hashed ^= high >> 24
            hashed &= ~high & 0xFFFFFFFF
        index = struct.unpack("<I", self._read(offset + 8 + (hashed % buckets) * 4, 4))[0]
        for _ in range(min(chains, 1 << 20)):
            if index == 0 or index >= chains:
                return None
            value = self._symbol(index, name)
            if value is not None:
                return value
            index = struct.unpack("<I", self._read(offset + 8 + (buckets + index) * 4, 4))[0]
        return None


# Opened files, by path: (identity, ExportTable or None).  The identity (see
# file_identity) tells a file rebuilt or replaced at the same path (a second core file
# loaded in one session maps other builds) from the one opened.
_files: Dict[str, Tuple[object, Optional[ExportTable]]] = {}


def _exports(path: str) -> Optional[ExportTable]:
    """The export table of ``path``, kept while the file at that path stays the same."""
    identity = file_identity(path)
    cached = _files.get(path)
    if cached is not None and cached[0] == identity:
        return cached[1]
    if cached is not None and cached[1] is not None:
        cached[1].close()
    try:
        table: Optional[ExportTable] = ExportTable(path)
    except (OSError, ValueError, struct.error):  # not ELF, unreadable: no answer
        table = None
    _files[path] = (identity, table)
    return table


def _mapped_files(mappings: Iterable[Mapping]):
    """(path, ExportTable, load bias) of each mapped ELF file, in mapping order."""
    for path, first in first_mappings(mappings).items():
        table = _exports(path)
        if table is None:
            continue
        bias = load_bias(first, table.loads)
        if bias is not None:
            yield path, table, bias


def symbol_address(mappings: Iterable[Mapping], name: str,
                   full_tables: bool = False) -> Optional[int]:
    """Run-time address of the defined symbol ``name`` in the first mapped file that
    exports it, found through the files' hash tables (a few reads per file).

    ``full_tables`` also searches each ``.symtab`` (names that are not exported), which
    means reading every symbol: only for names worth it."""
    files = []  # opened as far as needed: the program's own file often has the name
    for path, table, bias in _mapped_files(mappings):
        files.append((path, bias))
        try:
            value = table.value(name)
        except (OSError, ValueError, struct.error):  # a file truncated since: no answer
            value = None
        if value is not None:
            return value + bias
    if full_tables:
        for path, bias in files:
            value = symtab_value(path, name)
            if value is not None:
                return value + bias
    return None


# path -> the values found in its .symtab by name (None: not there), per file identity.
_symtab_values: FileCache[Dict[str, Optional[int]]] = FileCache(256)


def symtab_value(path: str, name: str) -> Optional[int]:
    """The link-time value of the defined symbol ``name`` in ``path``'s ``.symtab``.
    Read with struct, the name's string found first and then the symbols naming it:
    node's 110,000 symbols took pyelftools 3 s to index, for a name it lacks."""
    known = _symtab_values.get(path, lambda _path: {}, {})
    if name not in known:
        try:
            known[name] = _scan_symtab(path, name)
        except (OSError, ValueError, struct.error):
            known[name] = None
    return known[name]


def _scan_symtab(path: str, name: str) -> Optional[int]:
    with open(path, "rb") as handle:
        elf = RawElf(handle, path)
        table, strings = elf.sections.get(".symtab"), elf.sections.get(".strtab")
        if table is None or strings is None:
            return None
        names = strings.data()
        wanted = name.encode() + b"\0"
        offsets = set()  # where the name's string starts (maybe the tail of a longer one)
        at = names.find(wanted)
        while at >= 0 and len(offsets) < 64:
            offsets.add(at)
            at = names.find(wanted, at + 1)
        if not offsets:
            return None
        data = table.data()
        for string, _info, _other, index, value, _size in _SYMBOL.iter_unpack(
                data[:len(data) - len(data) % _SYMBOL.size]):
            if string in offsets and value and index:  # defined: not SHN_UNDEF
                return value
    return None
