"""Find symbols and sections of mapped ELF files without a debugger's help.

Used where asking the debugger is slow or unsafe (inside an unwinder, a symbol lookup
through the expression evaluator may need the very frame being unwound) or impossible
(a stripped CPython keeps ``_PyRuntime`` in its own ``.PyRuntime`` section).  The
mappings say where each file is loaded.
"""

import struct
from typing import Dict, Iterable, List, Optional, Tuple

from .file_cache import FileCache, file_identity
from .rawelf import RawElf, first_mappings, load_bias
from .model import Mapping

# Opened files, by path: (identity, ELFFile or None, [(p_vaddr, p_offset)] of PT_LOADs).
# The identity (see file_identity) tells a file rebuilt or replaced at the same path
# (a second core file loaded in one session maps other builds) from the one opened.
_files: Dict[str, Tuple[object, object, List[Tuple[int, int]]]] = {}
_have_pyelftools: Optional[bool] = None


def have_pyelftools() -> bool:
    """Whether pyelftools can be imported.  Without it no lookup here finds anything:
    callers say so (naming the package) rather than "no such symbol"."""
    global _have_pyelftools
    if _have_pyelftools is None:
        try:
            from elftools.elf.elffile import ELFFile  # noqa: F401
            _have_pyelftools = True
        except ImportError:
            _have_pyelftools = False
    return _have_pyelftools


def _elf(path: str):
    """pyelftools' view of ``path``, kept open while the file at that path stays the
    same one."""
    identity = file_identity(path)
    cached = _files.get(path)
    if cached is not None and cached[0] == identity:
        return cached[1], cached[2]
    if not have_pyelftools():
        return None, []  # not cached: the answer is "cannot tell", not "no symbol"
    if cached is not None and cached[1] is not None:
        try:
            cached[1].stream.close()
        except Exception:
            pass
    try:
        from elftools.elf.elffile import ELFFile
        elf = ELFFile(open(path, "rb"))  # kept for later lookups
        loads = [(seg["p_vaddr"], seg["p_offset"]) for seg in elf.iter_segments()
                 if seg["p_type"] == "PT_LOAD"]
    except Exception:  # not ELF, unreadable: no answer
        elf, loads = None, []
    _files[path] = (identity, elf, loads)
    return elf, loads


def _mapped_files(mappings: Iterable[Mapping]):
    """(path, ELFFile, load bias) of each mapped ELF file, in mapping order."""
    for path, first in first_mappings(mappings).items():
        elf, loads = _elf(path)
        if elf is None:
            continue
        bias = load_bias(first, loads)
        if bias is not None:
            yield path, elf, bias


def symbol_address(mappings: Iterable[Mapping], name: str,
                   full_tables: bool = False) -> Optional[int]:
    """Run-time address of the defined symbol ``name`` in the first mapped file that
    exports it, found through the files' hash tables (a few reads per file).

    ``full_tables`` also searches each ``.symtab`` (names that are not exported), which
    pyelftools does by parsing every symbol: seconds for a large library, so only for
    names worth it."""
    files = []  # opened as far as needed: the program's own file often has the name
    for path, elf, bias in _mapped_files(mappings):
        files.append((path, elf, bias))
        symbol = _exported_symbol(path, elf, name)
        if symbol is not None:
            return symbol["st_value"] + bias
    if full_tables:
        for path, _elf_file, bias in files:
            value = symtab_value(path, name)
            if value is not None:
                return value + bias
    return None


# path -> the values found in its .symtab by name (None: not there), per file identity.
_symtab_values: FileCache[Dict[str, Optional[int]]] = FileCache(256)
_SYMBOL = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size


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


def _defined(symbol) -> bool:
    return bool(symbol["st_value"]) and symbol["st_shndx"] != "SHN_UNDEF"


# path -> (the ELFFile it was read from, section): a file replaced at that path gets a
# new ELFFile (see _elf), and the old one's sections read a closed stream.
_hash_tables: Dict[str, Tuple[object, object]] = {}


def _hash_table(path: str, elf):
    """The file's symbol hash table (.gnu.hash, else .hash), kept: pyelftools makes a new
    section object, reading the table's header and Bloom filter, for every
    ``get_section_by_name`` (milliseconds per lookup and file, dozens per stop)."""
    cached = _hash_tables.get(path)
    if cached is None or cached[0] is not elf:
        found = None
        for table in (".gnu.hash", ".hash"):
            section = elf.get_section_by_name(table)
            if section is not None and hasattr(section, "get_symbol"):
                found = section
                break
        cached = _hash_tables[path] = (elf, found)
    return cached[1]


def _exported_symbol(path: str, elf, name: str):
    section = _hash_table(path, elf)
    if section is None:
        return None
    symbol = section.get_symbol(name)
    return symbol if symbol is not None and _defined(symbol) else None
