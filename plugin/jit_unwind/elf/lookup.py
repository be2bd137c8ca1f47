"""Find symbols and sections of mapped ELF files without a debugger's help.

Used where asking the debugger is slow or unsafe (inside an unwinder, a symbol lookup
through the expression evaluator may need the very frame being unwound) or impossible
(a stripped CPython keeps ``_PyRuntime`` in its own ``.PyRuntime`` section).  The
mappings say where each file is loaded.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import struct
from typing import (Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple,
                    TypeVar)

from ..file_cache import FileCache, Identity, file_identity
from .rawelf import RawElf, first_mappings, headers_of, load_bias
from ..model import Mapping

# Opened files: (Exports or None, [(p_vaddr, p_offset)] of PT_LOADs), kept per file
# identity (a second core file loaded in one session maps other builds at one path).
_files: FileCache[Tuple[Optional[Exports], List[Tuple[int, int]]]] = FileCache()
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size
MAX_CHAIN = 100_000  # hash chain entries followed for one name (a corrupt table loops)
Value = TypeVar("Value")


class Exports:
    """A file's exported (dynamic) symbols, looked up through its ``.gnu.hash`` or
    ``.hash`` table with struct: a few small reads per name.  pyelftools built a section
    object per table and file (its hash table's header and Bloom filter parsed through
    construct): 0.3 s at node's first stop for the 24 files it maps."""

    def __init__(self, path: str, elf: RawElf):
        self.path = path
        sections = elf.sections
        symbols, strings = sections.get(".dynsym"), sections.get(".dynstr")
        self._symbols = symbols["sh_offset"] if symbols is not None else None
        self._symbol_count = symbols["sh_size"] // _SYMBOL.size if symbols is not None else 0
        self._strings = strings["sh_offset"] if strings is not None else None
        gnu, sysv = sections.get(".gnu.hash"), sections.get(".hash")
        self._gnu = gnu.data() if gnu is not None else None
        self._sysv = sysv.data() if gnu is None and sysv is not None else None

    def value(self, name: str) -> Optional[int]:
        """The link-time value of the defined exported symbol ``name``, None when the
        file does not export it (or its tables cannot be read)."""
        if self._symbols is None or self._strings is None:
            return None
        wanted = name.encode() + b"\0"
        try:
            with open(self.path, "rb") as handle:
                for index in self._candidates(wanted[:-1]):
                    value = self._match(handle, index, wanted)
                    if value is not None:
                        return value
        except (OSError, struct.error):
            return None
        return None

    def _candidates(self, name: bytes):
        """Symbol indexes whose hash matches ``name``'s."""
        if self._gnu is not None:
            yield from _gnu_candidates(self._gnu, name)
        elif self._sysv is not None:
            yield from _sysv_candidates(self._sysv, name)

    def _match(self, handle, index: int, wanted: bytes) -> Optional[int]:
        symbols, strings = self._symbols, self._strings
        if symbols is None or strings is None or not 0 < index < self._symbol_count:
            return None
        handle.seek(symbols + index * _SYMBOL.size)
        string, _info, _other, section, value, _size = _SYMBOL.unpack(handle.read(_SYMBOL.size))
        handle.seek(strings + string)
        if handle.read(len(wanted)) != wanted:
            return None
        return value if value and section else None  # defined: not SHN_UNDEF


def _gnu_hash(name: bytes) -> int:
    value = 5381
    for byte in name:
        value = (value * 33 + byte) & 0xFFFFFFFF
    return value


def _gnu_candidates(table: bytes, name: bytes):
    buckets, first, bloom_size, shift = struct.unpack_from("<IIII", table, 0)
    if not buckets or not bloom_size:
        return
    wanted = _gnu_hash(name)
    (word,) = struct.unpack_from("<Q", table, 16 + 8 * ((wanted // 64) % bloom_size))
    mask = (1 << (wanted % 64)) | (1 << ((wanted >> shift) % 64))
    if word & mask != mask:
        return  # the Bloom filter says no: most files, for most names
    buckets_at = 16 + 8 * bloom_size
    chains_at = buckets_at + 4 * buckets
    (index,) = struct.unpack_from("<I", table, buckets_at + 4 * (wanted % buckets))
    if index < first:
        return
    for _ in range(MAX_CHAIN):
        at = chains_at + 4 * (index - first)
        if at + 4 > len(table):
            return
        (value,) = struct.unpack_from("<I", table, at)
        if value | 1 == wanted | 1:
            yield index
        if value & 1:  # the chain's last entry
            return
        index += 1


def _sysv_hash(name: bytes) -> int:
    value = 0
    for byte in name:
        value = ((value << 4) + byte) & 0xFFFFFFFF
        high = value & 0xF0000000
        if high:
            value ^= high >> 24
        value &= ~high & 0xFFFFFFFF
    return value


def _sysv_candidates(table: bytes, name: bytes):
    buckets, chains = struct.unpack_from("<II", table, 0)
    if not buckets:
        return
    (index,) = struct.unpack_from("<I", table, 8 + 4 * (_sysv_hash(name) % buckets))
    for _ in range(min(chains, MAX_CHAIN)):
        if not 0 < index < chains:
            return
        yield index
        (index,) = struct.unpack_from("<I", table, 8 + 4 * buckets + 4 * index)


def _elf(path: str):
    """The exported symbols of ``path`` and its PT_LOADs, kept while the file at that
    path stays the same one."""
    return _files.get(path, _read_elf, (None, []))


def _read_elf(path: str):
    elf = headers_of(path)  # parsed once for all its readers
    return (Exports(path, elf), elf.loads) if elf is not None else (None, [])


# What the look-ups ask of each mapped file first (its loaded sections' addresses, its
# PT_LOADs, whether it keeps a .symtab) and the names its exports answered so far:
# every first bt asks every mapped file for the JIT-interface descriptor, and parsing
# each one's headers and hash tables cost ~0.1 ms a file (HotSpot maps 28).  Kept on
# disk between sessions (elf_facts) as one entry for all the files a program maps,
# filed under the program's own file, each file's summary under its identity: one
# read at the first look-up, then a stat per file.  Written back at the end of a
# look-up that added to it.
SUMMARIES_FACT = "lookups"
MAX_KEPT_NAMES = 64  # exported names kept per file: a bound on the entry
MAX_KEPT_FILES = 512  # per program: files seen in its sessions


class _Summaries:
    """The summaries filed under one program's file: path -> (identity, summary)."""

    def __init__(self, program: str):
        self.program = program
        self.identity = file_identity(program)
        self.files: Dict[str, Tuple[Identity, dict]] = _kept_files(program)
        self.changed = False

    def of(self, path: str) -> dict:
        """``path``'s summary; empty for a file that is not ELF or cannot be read."""
        identity = file_identity(path)
        if identity is None:
            return {}
        found = self.files.get(path)
        if found is not None and found[0] == identity:
            return found[1]
        try:
            summary = _summarize(path)
        except OSError:
            return {}
        except (ValueError, struct.error):  # not ELF (locale files, a JVM's archives)
            # Kept, but no reason to write by itself: a per-process file (HotSpot's
            # hsperfdata) would be a write at every session.
            self.files[path] = (identity, {})
            return {}
        self.files[path] = (identity, summary)
        self.changed = True
        return summary

    def write(self) -> None:
        from .facts import keep
        self.changed = False
        # Files gone or rebuilt since are left out; the bound keeps the entry small.
        files = {path: entry for path, entry in self.files.items()
                 if file_identity(path) == entry[0]}
        if len(files) > MAX_KEPT_FILES:
            files = dict(list(files.items())[-MAX_KEPT_FILES:])
        self.files = files
        keep(self.program, SUMMARIES_FACT, files)  # a cache it cannot write is left as none


_programs: Dict[str, _Summaries] = {}


def _summaries(program: str) -> _Summaries:
    found = _programs.get(program)
    if found is None or found.identity != file_identity(program):
        if len(_programs) >= 16:
            _programs.clear()
        found = _programs[program] = _Summaries(program)
    return found


def _kept_files(program: str) -> Dict[str, Tuple[Identity, dict]]:
    from .facts import kept
    # An unreadable or invalid entry reads as none (kept computes {} again).
    return dict(kept(program, SUMMARIES_FACT, lambda _path: {}, _valid_files))


def _summarize(path: str) -> dict:
    with open(path, "rb") as handle:
        elf = RawElf(handle, path)
    return {"sections": {name: section["sh_addr"] for name, section in elf.sections.items()
                         if section["sh_addr"]},
            "loads": list(elf.loads), "symtab": ".symtab" in elf.sections, "exports": {}}


def _valid_files(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(path, str) and isinstance(entry, tuple) and len(entry) == 2
        and isinstance(entry[0], tuple) and (entry[1] == {} or _valid_summary(entry[1]))
        for path, entry in value.items())


def _valid_summary(value) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("sections"), dict)
            and isinstance(value.get("loads"), list) and type(value.get("symtab")) is bool
            and isinstance(value.get("exports"), dict)
            and all(isinstance(load, tuple) and len(load) == 2 for load in value["loads"]))


def _exported_value(path: str, summary: dict, group: _Summaries, name: str
                    ) -> Optional[int]:
    """``name``'s value among the file's exports: its summary's answer, else read
    through its hash table (and the answer added to the summary)."""
    answers = summary["exports"]
    if name in answers:
        return answers[name]
    exports, _loads = _elf(path)
    value = exports.value(name) if exports is not None else None
    if len(answers) < MAX_KEPT_NAMES:
        answers[name] = value
        group.changed = True
    return value


def _look_up(mappings: Iterable[Mapping], look: Callable[[_Summaries, Iterator], Value]
             ) -> Optional[Value]:
    """``look(group, files)``: ``files`` yields (path, summary, load bias) of each
    mapped ELF file in mapping order, summarized only as far as ``look`` iterates (the
    program's own file often has the answer), ``group`` holds their summaries; what
    the look-up added to them is written back after it."""
    if _last[0] is mappings:
        first, group, seen = _last[1:]
    else:
        first = first_mappings(mappings)
        if not first:
            return None
        group = _summaries(next(iter(first)))  # the program's file: mapped first
        seen = {}
        if isinstance(mappings, Sequence):
            _last[:] = [mappings, first, group, seen]
    try:
        return look(group, _summarized(group, first, seen))
    finally:
        if group.changed:
            group.write()


# The mapping list last looked up in (a RegionMap's, the same object while the process's
# mappings stay the same), its files and what they gave (path -> (summary, bias), None
# for a file that is not ELF or not placed): a first bt asks the same files for the JIT
# interface's descriptor, .PyRuntime and _PyRuntime, each file stat'ed once.
_last: list = [None, None, None, None]


def _summarized(group: _Summaries, first: Dict[str, Mapping], seen: dict) -> Iterator:
    for path, mapping in first.items():
        if path in seen:
            found = seen[path]
        else:
            found = None
            summary = group.of(path)
            if summary:
                bias = load_bias(mapping, summary["loads"])
                if bias is not None:
                    found = summary, bias
            seen[path] = found
        if found is not None:
            yield path, found[0], found[1]


def symbol_address(mappings: Iterable[Mapping], name: str, full_tables: bool = False,
                   debug_files: Optional[Dict[str, str]] = None) -> Optional[int]:
    """Run-time address of the defined symbol ``name`` in the first mapped file that
    exports it, found through the files' hash tables (a few reads per file, once per
    file and name: the answers are kept with the file's summary).

    ``full_tables`` also searches each ``.symtab`` (names that are not exported), and
    a stripped file's separate debug file's (where GDB finds its minimal symbols): a
    scan of the whole string table, kept on disk per file, so only for names worth it.
    ``debug_files``: each file's debug file as the debugger read it (else found here)."""
    return _look_up(mappings, lambda group, files: _symbol_address(
        group, files, name, full_tables, debug_files))


def _symbol_address(group, mapped, name, full_tables, debug_files) -> Optional[int]:
    files = []  # summarized as far as needed
    for path, summary, bias in mapped:
        files.append((path, summary, bias))
        value = _exported_value(path, summary, group, name)
        if value is not None:
            return value + bias
    if full_tables:
        if debug_files is not None:  # the debugger's names may go through symlinks
            debug_files = _by_inode(debug_files)
        for path, summary, bias in files:
            value = symtab_value(path, name) if summary["symtab"] else None
            if value is not None:
                return value + bias
        for path, summary, bias in files:
            if summary["symtab"]:  # not stripped: its own table was searched
                continue
            debug_file = (_given_debug_file(group, path, debug_files)
                          if debug_files is not None else _debug_file(path))
            value = symtab_value(debug_file, name) if debug_file else None
            if value is not None:
                return value + bias  # a debug file keeps its file's addresses
    return None


def _by_inode(debug_files: Dict[str, str]) -> Dict[Tuple[int, int], str]:
    """The debugger's debug files by their file's device and inode: a stat each, where
    os.path.realpath took one per part of the name (~0.05 ms a file at a first bt)."""
    found = {}
    for path, debug_file in debug_files.items():
        identity = file_identity(path)
        if identity is not None:
            found[identity[:2]] = debug_file
    return found


def _given_debug_file(group: _Summaries, path: str,
                      by_inode: Dict[Tuple[int, int], str]) -> Optional[str]:
    """The debug file the debugger read for the mapped file ``path`` (summarized: its
    identity is kept), None without one or for a file gone since."""
    entry = group.files.get(path)
    return by_inode.get(entry[0][:2]) if entry is not None else None


def _debug_file(path: str) -> Optional[str]:
    """The separate debug file GDB reads for ``path`` (build id, then debug link)."""
    from . import debug_files
    elf = headers_of(path)  # parsed once for all its readers
    if elf is None:
        return None
    try:
        identity, link = debug_files.build_id(elf), debug_files.debug_link(elf)
    except (OSError, ValueError, struct.error):
        return None
    return debug_files.separate_debug_file(path, identity, link)


def section_address(mappings: Iterable[Mapping], section_name: str) -> Optional[int]:
    """Run-time address of ``section_name`` in the first mapped file that has it
    (CPython 3.12+'s ``.PyRuntime``): from the files' summaries, where reading every
    mapped file's headers again cost ~4 ms at HotSpot's first stop."""
    return _look_up(mappings, lambda _group, files: next(
        (summary["sections"][section_name] + bias for _path, summary, bias in files
         if summary["sections"].get(section_name)), None))


# path -> the values found in its .symtab by name (None: not there), per file identity.
_symtab_values: FileCache[Dict[str, Optional[int]]] = FileCache(256)
def symtab_value(path: str, name: str) -> Optional[int]:
    """The link-time value of the defined symbol ``name`` in ``path``'s ``.symtab``.
    Read with struct, the name's string found first and then the symbols naming it:
    node's 110,000 symbols took pyelftools 3 s to index, for a name it lacks."""
    known = _symtab_values.get(path, lambda _path: {}, {})
    if name not in known:
        try:
            known[name] = _kept_symtab_value(path, name)
        except (OSError, ValueError, struct.error):
            known[name] = None
    return known[name]


def _kept_symtab_value(path: str, name: str) -> Optional[int]:
    """_scan_symtab's answer, kept on disk between sessions (elf_facts.py): the scan
    reads the whole table (libjvm's: 4 MB, ~4 ms of HotSpot's first bt)."""
    import zlib
    from .facts import kept

    def valid(value) -> bool:  # the name itself is kept: another may share its CRC
        return (isinstance(value, tuple) and len(value) == 2 and value[0] == name
                and (value[1] is None or type(value[1]) is int))

    return kept(path, f"symtab-{zlib.crc32(name.encode()):08x}",
                lambda path: (name, _scan_symtab(path, name)), valid)[1]


def _scan_symtab(path: str, name: str) -> Optional[int]:
    with open(path, "rb") as handle:
        elf = RawElf(handle, path)
        table, strings = elf.sections.get(".symtab"), elf.sections.get(".strtab")
        if table is None or strings is None:
            return None
        names = strings.data()
        wanted = name.encode() + b"\0"
        offsets: set[int] = set()  # where the name's string starts (maybe the tail of a longer one)
        at = names.find(wanted)
        while at >= 0 and len(offsets) < 64:
            offsets.add(at)
            at = names.find(wanted, at + 1)
        if not offsets:
            return None
        data = table.data()
        size = len(data) - len(data) % _SYMBOL.size
        # The symbols naming it, found by their first word (st_name) with bytes.find:
        # a Python loop over libjvm's 58,000 symbols cost ~5 ms of HotSpot's first bt.
        found = []
        for offset in offsets:
            word = struct.pack("<I", offset)
            at = data.find(word, 0, size)
            while at >= 0:
                if at % _SYMBOL.size == 0:
                    found.append(at)
                at = data.find(word, at + 1, size)
        for at in sorted(found):  # the first in the table, as a scan finds it
            _string, _info, _other, index, value, _size = _SYMBOL.unpack_from(data, at)
            if value and index:  # defined: not SHN_UNDEF
                return value
    return None
