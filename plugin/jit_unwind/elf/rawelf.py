"""Section and program headers of an x86-64 ELF file, read with ``struct``.

The first stop of every program looks at libc, ld.so and the interpreter, where
pyelftools costs milliseconds per file (its import included); pyelftools stays for the
tables read in full (symbols, DWARF)."""

from __future__ import annotations  # annotations unevaluated: less work at load

import struct
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional

from ..file_cache import FileCache

if TYPE_CHECKING:
    from ..model import Mapping

__all__ = ["RawElf", "RawSection", "file_bias", "first_mappings", "headers_of",
           "load_bias"]


class RawSection:
    """One section header, read with struct (the keys pyelftools' sections have)."""

    def __init__(self, handle, name: str, fields):
        self._handle = handle
        self.name = name
        kind, flags, addr, offset, size = fields
        self._fields = {"sh_type": "SHT_PROGBITS" if kind == 1 else kind, "sh_flags": flags,
                        "sh_addr": addr, "sh_offset": offset, "sh_size": size}

    def __getitem__(self, key):
        return self._fields[key]

    def data(self, handle=None) -> bytes:
        """The section's bytes, through ``handle`` (the file opened again, to read
        several sections of headers kept by headers_of at one open) or the handle the
        headers were read from."""
        if handle is not None:
            return self._read(handle)
        if self._handle.closed:  # headers kept after their reading (headers_of)
            with open(self._handle.name, "rb") as handle:
                return self._read(handle)
        return self._read(self._handle)

    def _read(self, handle) -> bytes:
        handle.seek(self["sh_offset"])
        return handle.read(self["sh_size"])


class RawElf:
    """Section and program headers of a 64-bit little-endian ELF file."""

    def __init__(self, handle, path: str):
        self.path = path
        header = handle.read(64)
        if len(header) < 64 or header[:4] != b"\x7fELF" or header[4:6] != b"\x02\x01":
            raise ValueError("not a 64-bit little-endian ELF file")
        self.machine = struct.unpack_from("<H", header, 18)[0]
        phoff, shoff = struct.unpack_from("<QQ", header, 32)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", header, 54)
        handle.seek(phoff)
        table = handle.read(phentsize * phnum)
        self.loads = []  # (p_vaddr, p_offset) of each PT_LOAD
        for index in range(phnum):
            kind, _flags, offset, vaddr = struct.unpack_from("<IIQQ", table, index * phentsize)
            if kind == 1:
                self.loads.append((vaddr, offset))
        handle.seek(shoff)
        table = handle.read(shentsize * shnum)
        headers = [struct.unpack_from("<IIQQQQ", table, index * shentsize)
                   for index in range(shnum)]
        names = b""
        if shstrndx < len(headers):
            handle.seek(headers[shstrndx][4])
            names = handle.read(headers[shstrndx][5])
        self.sections: Dict[str, RawSection] = {}
        for name_offset, kind, flags, addr, offset, size in headers:
            end = names.find(b"\0", name_offset)
            name = names[name_offset:end].decode("ascii", "replace") if end >= 0 else ""
            self.sections.setdefault(name, RawSection(handle, name,
                                                       (kind, flags, addr, offset, size)))

    def dwarf(self):
        """pyelftools' DWARF view of the file, for tables read in full."""
        from elftools.elf.elffile import ELFFile
        return ELFFile(open(self.path, "rb")).get_dwarf_info(follow_links=False)


# Several readers look at one file during a first bt (its PT_LOADs, its CFI, its code
# without CFI): each parse of the headers there cost 0.1-0.4 ms.
_headers: FileCache[Optional[RawElf]] = FileCache(64)


def headers_of(path: str) -> Optional[RawElf]:
    """The headers of the ELF file now at ``path``, parsed once while it stays the same
    file (its sections' data read by opening it again); None when it is not ELF or
    cannot be read."""
    return _headers.get(path, _parsed, None)


def _parsed(path: str) -> RawElf:
    with open(path, "rb") as handle:
        return RawElf(handle, path)


def load_bias(mapping, loads) -> Optional[int]:
    """How far the file was moved from its link addresses, from one of its mappings."""
    for vaddr, offset in loads:
        if offset <= mapping.offset and (mapping.offset - offset) % 0x1000 == 0:
            candidate = mapping.start - (vaddr + mapping.offset - offset)
            if candidate % 0x1000 == 0:
                return candidate
    return None


def first_mappings(mappings: Iterable) -> Dict[str, Mapping]:
    """path -> its mapping of the lowest file offset (the one the load bias is read
    from), for each file mapped at an absolute path, in mapping order."""
    first: Dict[str, Mapping] = {}
    for mapping in mappings:
        path = mapping.path
        if path.startswith("/") and (path not in first
                                     or mapping.offset < first[path].offset):
            first[path] = mapping
    return first


def file_bias(path: str, mappings: Iterable, loads: List) -> Optional[int]:
    """The load bias of ``path`` in the process whose ``mappings`` these are."""
    mapping = first_mappings(m for m in mappings if m.path == path).get(path)
    return load_bias(mapping, loads) if mapping is not None else None
