"""Program headers and notes of a 64-bit little-endian ELF file (a core), read with
struct and nothing else: the core readers, region discovery, the truncation check and
the CLI's look at a core's files all read them through here."""

from __future__ import annotations  # annotations unevaluated: less work at load

import struct
from typing import Iterator, List, Optional, Tuple

PT_LOAD, PT_NOTE = 1, 4
NT_AUXV, NT_FILE = 6, 0x46494C45
PROGRAM_HEADER = struct.Struct("<IIQQQQQQ")
NOTE_HEADER = struct.Struct("<III")
NT_GNU_BUILD_ID = 3


def program_headers(handle) -> List[Tuple[int, ...]]:
    """Every program header of a 64-bit little-endian ELF file, as the fields of
    Elf64_Phdr; raises ValueError for another file."""
    header = handle.read(64)
    if len(header) < 64 or header[:4] != b"\x7fELF" or header[4:6] != b"\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF file")
    phoff = struct.unpack_from("<Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", header, 54)
    if phentsize < PROGRAM_HEADER.size:
        raise ValueError("program headers too small")
    handle.seek(phoff)
    table = handle.read(phentsize * phnum)
    if len(table) < phentsize * phnum:
        raise ValueError("program headers cut short")
    return [PROGRAM_HEADER.unpack_from(table, index * phentsize) for index in range(phnum)]


def note_bodies(data: bytes) -> Iterator[Tuple[int, bytes]]:
    """(type, descriptor) of each note in a PT_NOTE segment's bytes."""
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = NOTE_HEADER.unpack_from(data, at)
        desc = at + 12 + ((namesz + 3) & ~3)
        at = desc + ((descsz + 3) & ~3)
        if at > len(data) + 3:
            break  # a note cut short
        yield kind, data[desc:desc + descsz]


def file_entries(body: bytes) -> List[Tuple[int, int, str, int]]:
    """An NT_FILE note's (start, end, path, file offset) entries."""
    if len(body) < 16:
        return []
    count, page = struct.unpack_from("<QQ", body, 0)
    names_at = 16 + 24 * count
    if names_at > len(body):
        return []
    names = body[names_at:].split(b"\0")
    entries = []
    for index in range(min(count, len(names))):
        start, end, page_offset = struct.unpack_from("<QQQ", body, 16 + 24 * index)
        entries.append((start, end, names[index].decode("utf-8", "replace"),
                        page_offset * page))
    return entries


def gnu_build_id(data: bytes) -> Optional[str]:
    """The GNU build ID (hex) among the notes in ``data`` (a PT_NOTE segment's bytes, a
    ``.note.gnu.build-id`` section's); None without a whole one."""
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = NOTE_HEADER.unpack_from(data, at)
        name_at = at + 12
        desc = name_at + ((namesz + 3) & ~3)
        if kind == NT_GNU_BUILD_ID and data[name_at:name_at + namesz] == b"GNU\0":
            value = data[desc:desc + descsz]
            return value.hex() if len(value) == descsz and descsz else None
        at = desc + ((descsz + 3) & ~3)
    return None
