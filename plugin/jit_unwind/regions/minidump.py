"""The process's mappings from a minidump's copy of /proc/PID/maps (the LinuxMaps
stream LLDB's ``process save-core`` writes), with their file offsets: LLDB's region list
of a minidump gives none, so a second mapping of a file's code (V8's builtins remapped
near the JIT code) could not be told apart from the file's own.  Read with struct,
every size bounded: a truncated or foreign file gives None."""

import os
import struct
from typing import Dict, List, Optional, Tuple

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


def stream_directory(handle) -> Optional[Dict[int, Tuple[int, int]]]:
    """Each stream type of the minidump open as ``handle`` and the (size, file offset)
    of its first stream; None when it is no minidump."""
    header = handle.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    signature, _version, count, directory = _HEADER.unpack(header)
    if signature != b"MDMP" or count > MAX_STREAMS:
        return None
    handle.seek(directory)
    entries = handle.read(count * _DIRECTORY_ENTRY.size)
    streams: Dict[int, Tuple[int, int]] = {}
    for index in range(len(entries) // _DIRECTORY_ENTRY.size):
        kind, size, offset = _DIRECTORY_ENTRY.unpack_from(entries, index * _DIRECTORY_ENTRY.size)
        streams.setdefault(kind, (size, offset))
    return streams


def _read(path: str) -> Optional[List[Mapping]]:
    try:
        with open(path, "rb") as handle:
            streams = stream_directory(handle)
            size, offset = (streams or {}).get(LINUX_MAPS, (0, 0))
            if not size or size > MAX_MAPS_TEXT:
                return None
            handle.seek(offset)
            text = handle.read(size).decode("utf-8", errors="replace")
            return parse_proc_maps(text) or None
    except OSError:
        return None


MEMORY_LIST, MEMORY64_LIST = 5, 9
MAX_RANGES = 1 << 16


def memory_ranges(path: str) -> Optional[List[Tuple[int, int]]]:
    """The (start, end) of each range of memory the minidump at ``path`` holds (its
    memory list and 64-bit memory list; not those a file cut short lost); None when it
    cannot be read."""
    try:
        with open(path, "rb") as handle:
            streams = stream_directory(handle)
            if streams is None:
                return None
            length = os.fstat(handle.fileno()).st_size
            ranges: List[Tuple[int, int]] = []
            size, offset = streams.get(MEMORY_LIST, (0, 0))
            if size >= 4:
                handle.seek(offset)
                count = min(int.from_bytes(handle.read(4), "little"), MAX_RANGES)
                table = handle.read(16 * count)
                for index in range(len(table) // 16):
                    start, held, rva = struct.unpack_from("<QII", table, 16 * index)
                    if rva + held <= length:
                        ranges.append((start, start + held))
            size, offset = streams.get(MEMORY64_LIST, (0, 0))
            if size >= 16:
                handle.seek(offset)
                count, rva = struct.unpack("<QQ", handle.read(16))
                table = handle.read(16 * min(count, MAX_RANGES))
                for index in range(len(table) // 16):
                    start, held = struct.unpack_from("<QQ", table, 16 * index)
                    if rva + held <= length:
                        ranges.append((start, start + held))
                    rva += held  # the ranges' bytes follow one another
            return ranges
    except (OSError, struct.error):
        return None


def missing_runtime(process, runtime_at) -> str:
    """For a minidump that does not hold _PyRuntime (at ``runtime_at()``), such as one
    of the threads' stacks alone: what is missing, and the dump that would hold it; ""
    otherwise.  What a debugger reads there instead is the file's initial bytes, never
    the process's: a guess."""
    if process.connection() != "minidump":
        return ""
    path = getattr(process, "minidump_file", lambda: None)()
    ranges = memory_ranges(path) if path else None
    runtime = runtime_at() if ranges is not None else None
    if runtime is None or any(start <= runtime < end for start, end in ranges or ()):
        return ""
    held = sum(end - start for start, end in ranges or ())
    return (f"the minidump {path} does not hold _PyRuntime ({runtime:#x}), nor the "
            f"interpreter's other memory (it holds {len(ranges or ())} memory ranges, "
            f"{held >> 10} KiB in all, such as the threads' stacks): no Python frames can be "
            "read; "
            "a minidump with the process's written memory has them (LLDB's process "
            "save-core --plugin-name=minidump --style modified-memory or full)")


def missing_code(process, pcs) -> str:
    """For a minidump that does not hold the code at some of ``pcs`` (JIT frames' pcs:
    LLDB's modified-memory and stack styles leave executable memory out): how many,
    and what it does to the frames past them; "" otherwise."""
    if process.connection() != "minidump" or not pcs:
        return ""
    path = getattr(process, "minidump_file", lambda: None)()
    ranges = memory_ranges(path) if path else None
    if ranges is None:
        return ""
    lacking = [pc for pc in pcs if not any(start <= pc < end for start, end in ranges)]
    if not lacking:
        return ""
    return (f"the minidump {path} does not hold the code of {len(lacking)} JIT "
            f"frame{'s' if len(lacking) > 1 else ''}: their callers are found by stack "
            "scan (marked as guesses), and a frame in between may be missing; a minidump "
            "of the whole memory has it (LLDB's process save-core --plugin-name=minidump "
            "--style full)")
