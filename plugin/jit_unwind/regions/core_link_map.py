"""A core's mapped files when it has no NT_FILE note (qemu-user's cores, some dumpers).

Without the note, a module's code segment looks like anonymous executable memory, which
is what JIT code is.  What the core still has says where each file is: the auxv
(AT_PHDR/AT_ENTRY: the executable's load address, AT_BASE: the dynamic linker's) and
the dynamic linker's list of loaded objects in the core's memory (the executable's
PT_DYNAMIC -> DT_DEBUG -> r_debug.r_map -> link_map: l_addr, l_name, l_next).  Each
file's own program headers then give its segments, as NT_FILE entries would: (start,
end, path, file offset), the path one this machine can open (under ``sysroot`` first).
Memory the core lacks is normal: what cannot be read is left out."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
import struct
from typing import Callable, List, Optional, Sequence, Tuple

from ..elf.notes import program_headers
from ..file_cache import FileCache

AT_PHDR, AT_ENTRY, AT_BASE, AT_EXECFN = 3, 9, 7, 31
PT_LOAD, PT_DYNAMIC, PT_INTERP, PT_PHDR = 1, 2, 3, 6
DT_NULL, DT_DEBUG = 0, 21
PAGE = 0x1000
# Bounds: a link_map list longer than this is corrupt (a cycle or garbage pointers).
MAX_OBJECTS = 1024
MAX_DYNAMIC = 512  # entries of .dynamic read
MAX_PATH = 4096

Entry = Tuple[int, int, str, int]  # start, end, path, file offset
Read = Callable[[int, int], Optional[bytes]]


class _ElfFile:
    """What this needs of an ELF file's headers: its entry point and program headers
    as (type, flags, offset, vaddr, filesz, memsz)."""

    def __init__(self, entry: int, headers: List[Tuple[int, int, int, int, int, int]],
                 interp: str):
        self.entry = entry
        self.headers = headers
        self.interp = interp  # PT_INTERP: the dynamic linker's path

    def first(self, kind: int):
        return next((h for h in self.headers if h[0] == kind), None)


def _load(path: str) -> _ElfFile:
    with open(path, "rb") as handle:
        headers = program_headers(handle)
        handle.seek(24)
        entry = struct.unpack("<Q", handle.read(8))[0]
        interp = b""
        for kind, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align in headers:
            if kind == PT_INTERP and 0 < filesz <= MAX_PATH:
                handle.seek(offset)
                interp = handle.read(filesz).split(b"\0")[0]
    return _ElfFile(entry, [(kind, flags, offset, vaddr, filesz, memsz)
                            for kind, flags, offset, vaddr, _paddr, filesz, memsz, _align
                            in headers], interp.decode("utf-8", "replace"))


# Per file: its headers, None when it cannot be read or is no 64-bit little-endian ELF.
_FILES: FileCache[Optional[_ElfFile]] = FileCache(limit=64)


def _elf(path: str) -> Optional[_ElfFile]:
    return _FILES.get(path, _load, None)


def _host_path(path: str, sysroot: str) -> Optional[str]:
    """Where ``path`` of the core's machine is here: under the sysroot, else itself."""
    if not path:
        return None
    candidates = [sysroot.rstrip("/") + path] if sysroot and path.startswith("/") else []
    candidates.append(path)
    return next((c for c in candidates if os.path.isfile(c)), None)


def _segments(path: str, elf: _ElfFile, bias: int) -> List[Entry]:
    """The file's load segments where ``bias`` puts them: the pages its bytes back."""
    entries = []
    for kind, _flags, offset, vaddr, filesz, _memsz in elf.headers:
        if kind == PT_LOAD and filesz:
            start = (bias + vaddr) & ~(PAGE - 1)
            end = (bias + vaddr + filesz + PAGE - 1) & ~(PAGE - 1)
            entries.append((start, end, path, offset & ~(PAGE - 1)))
    return entries


def _string(read: Read, address: int) -> str:
    data = read(address, 256) or b""
    while data and b"\0" not in data and len(data) < MAX_PATH:
        more = read(address + len(data), 256)
        if not more:
            break
        data += more
    return data.split(b"\0")[0].decode("utf-8", "replace")


def _words(read: Read, address: int, count: int) -> Optional[Tuple[int, ...]]:
    data = read(address, 8 * count)
    if data is None or len(data) < 8 * count:
        return None
    return struct.unpack(f"<{count}Q", data)


def _link_map(read: Read, elf: _ElfFile, bias: int) -> List[Tuple[int, int]]:
    """(l_addr, l_name's address) of each object the dynamic linker lists, from the
    executable's DT_DEBUG; [] when the core lacks any link of it."""
    dynamic = elf.first(PT_DYNAMIC)
    if dynamic is None:
        return []
    data = read(bias + dynamic[3], 16 * min(dynamic[5] // 16, MAX_DYNAMIC)) or b""
    words = struct.unpack(f"<{len(data) // 8}Q", data[:len(data) // 8 * 8])
    r_debug = 0
    for index in range(0, len(words) - 1, 2):
        if words[index] == DT_NULL:
            break
        if words[index] == DT_DEBUG:
            r_debug = words[index + 1]
    first = _words(read, r_debug + 8, 1) if r_debug else None  # r_map, after r_version
    objects: List[Tuple[int, int]] = []
    seen = set()
    link = first[0] if first else 0
    while link and link not in seen and len(objects) < MAX_OBJECTS:
        seen.add(link)
        fields = _words(read, link, 4)  # l_addr, l_name, l_ld, l_next
        if fields is None:
            break
        objects.append((fields[0], fields[1]))
        link = fields[3]
    return objects


def _program(read: Read, values: dict, sysroot: str, executable: Optional[str]):
    """(path here, headers, load bias) of the program the auxv describes; None when no
    file at hand is that program."""
    names = [executable] if executable else []
    if values.get(AT_EXECFN):
        names.append(_string(read, values[AT_EXECFN]))
    for name in names:
        path = _host_path(name, sysroot)
        elf = _elf(path) if path else None
        if elf is None:
            continue
        phdr = elf.first(PT_PHDR)
        if phdr is not None and values.get(AT_PHDR):
            bias = values[AT_PHDR] - phdr[3]
        else:
            bias = values.get(AT_ENTRY, elf.entry) - elf.entry
        if values.get(AT_ENTRY) in (None, elf.entry + bias):
            return path, elf, bias
        # else another build of the program than the one that ran: its layout lies
    return None


def mapped_files(read: Read, auxv: Sequence[Tuple[int, int]], sysroot: str = "",
                 executable: Optional[str] = None) -> List[Entry]:
    """The files the core's process had mapped, as NT_FILE entries; ``read(address,
    size)`` reads the core's memory (None where it holds none), ``auxv`` its (type,
    value) pairs, ``executable`` the program's path when the caller knows it."""
    values = dict(auxv)
    found = _program(read, values, sysroot, executable)
    if found is None:
        return []
    program, elf, bias = found
    entries = _segments(program, elf, bias)
    placed = {bias}
    for l_addr, l_name in _link_map(read, elf, bias):
        path = _host_path(_string(read, l_name), sysroot) if l_name and l_addr not in placed \
            else None
        library = _elf(path) if path else None
        if path and library is not None:  # not the vDSO (no file), nor the program again
            entries += _segments(path, library, l_addr)
            placed.add(l_addr)
    base = values.get(AT_BASE)
    if base and base not in placed:  # the dynamic linker, before or without a link_map
        path = _host_path(elf.interp, sysroot)
        interp = _elf(path) if path else None
        if path and interp is not None:
            entries += _segments(path, interp, base)
    return sorted(entries)


def last_library(read: Read, auxv: Sequence[Tuple[int, int]], sysroot: str = "",
                 executable: Optional[str] = None) -> Optional[str]:
    """The path (as the process named it) of the last object in the dynamic linker's
    list that is a file here: the last a debugger loads of a core without a vDSO."""
    found = _program(read, dict(auxv), sysroot, executable)
    if found is None:
        return None
    _path, elf, bias = found
    names = [_string(read, l_name) for _l_addr, l_name in _link_map(read, elf, bias) if l_name]
    return next((name for name in reversed(names) if _host_path(name, sysroot)), None)
