"""The process's mappings from a minidump's copy of /proc/PID/maps (the LinuxMaps
stream LLDB's ``process save-core`` writes), with their file offsets: LLDB's region list
of a minidump gives none, so a second mapping of a file's code (V8's builtins remapped
near the JIT code) could not be told apart from the file's own.  Read with struct,
every size bounded: a truncated or foreign file gives None."""

import os
import struct
from typing import List, Optional

from ..model import Mapping
from .procmaps import parse_proc_maps

_HEADER = struct.Struct("<4sIII")  # signature, version, stream count, directory offset
_DIRECTORY_ENTRY = struct.Struct("<III")  # stream type, data size, data offset
LINUX_MAPS = 0x47670009  # MD_LINUX_MAPS (Breakpad's Linux streams)
MAX_STREAMS = 4096
MAX_MAPS_TEXT = 64 << 20


# The last file read and its mappings: the same list while the file is unchanged, so
# the region map built from it is reused (discovery.build_region_map).
_last: list = [None, None]  # (path, size, mtime), mappings


def minidump_maps(path: str) -> Optional[List[Mapping]]:
    """The mappings of the minidump at ``path`` as its process's /proc/PID/maps listed
    them; None when it is no minidump or has no such stream.  The list is shared with
    later calls while the file stays the same: do not change it."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    key = (path, status.st_size, status.st_mtime_ns)
    if _last[0] == key:
        return _last[1]
    mappings = _read(path)
    _last[:] = [key, mappings]
    return mappings


def _read(path: str) -> Optional[List[Mapping]]:
    try:
        with open(path, "rb") as handle:
            header = handle.read(_HEADER.size)
            if len(header) < _HEADER.size:
                return None
            signature, _version, count, directory = _HEADER.unpack(header)
            if signature != b"MDMP" or count > MAX_STREAMS:
                return None
            handle.seek(directory)
            entries = handle.read(count * _DIRECTORY_ENTRY.size)
            for index in range(len(entries) // _DIRECTORY_ENTRY.size):
                kind, size, offset = _DIRECTORY_ENTRY.unpack_from(
                    entries, index * _DIRECTORY_ENTRY.size)
                if kind == LINUX_MAPS and size <= MAX_MAPS_TEXT:
                    handle.seek(offset)
                    text = handle.read(size).decode("utf-8", errors="replace")
                    return parse_proc_maps(text) or None
    except OSError:
        return None
    return None
