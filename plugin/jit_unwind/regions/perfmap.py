"""Read perf maps (/tmp/perf-PID.map): ``START SIZE NAME`` per line, hex numbers."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import List, Optional

from ..file_cache import FileCache
from ..model import Region, RegionSource

# Parsed maps, kept while the file stays the same: a V8 or CPython perf map can have
# many thousands of lines and only grows, and a new process with the same pid writes a
# new file.
_cache: FileCache[List[Region]] = FileCache()


def perf_map_path(pid: int, root: str = "") -> str:
    """The perf map of the process that knows itself as ``pid``, its root at ``root``
    here ("" for this machine's: a container's /proc/PID/root, a core's sysroot)."""
    return f"{root.rstrip('/')}/tmp/perf-{pid}.map"


def parse_perf_map(text: str) -> List[Region]:
    entries: List[Region] = []
    for line in text.splitlines():
        fields = line.split(None, 2)
        if len(fields) < 3:
            continue
        try:
            start, size = int(fields[0], 16), int(fields[1], 16)
        except ValueError:
            continue
        if size > 0:
            entries.append(Region(start, start + size, RegionSource.PERF_MAP, fields[2].strip(),
                                  sequence=len(entries)))
    return entries


def read_perf_map(pid: int, root: str = "") -> List[Region]:
    """Entries of the perf map of ``pid`` (see perf_map_path); empty without one."""
    return _cache.get(perf_map_path(pid, root), _parse_file, [])


def _parse_file(path: str) -> List[Region]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return parse_perf_map(handle.read())


# A live process cannot have written a perf map last modified before it started; its
# start time is known to the clock tick and boot time's second only, hence the slack.
START_SLACK = 2.0


def stale_perf_map(pid: int, core_file: Optional[str] = None,
                   path: Optional[str] = None) -> str:
    """Why the perf map of ``pid`` describes another process, or "" when it may be this
    one's.  Pids are reused and a perf map outlives its process.  A core: a process
    cannot write while it is being dumped, so a map modified after the core file was
    written holds lines the core's process never wrote, or wrote later for code mapped
    after the dump (perhaps at the same addresses): none is used.  A live process: a map
    last modified before the process started was left by an earlier one.  ``path``:
    where its map is (a process in a container), else /tmp's."""
    path = path or perf_map_path(pid)
    try:
        written = os.stat(path).st_mtime_ns
    except OSError:
        return ""
    if core_file:
        try:
            dumped = os.stat(core_file).st_mtime_ns
        except OSError:
            return ""
        if written > dumped:
            return (f"{path} was written after the core file: it is another process's, "
                    "or holds lines for code mapped after the dump; its names are not used")
        return ""
    started = process_start_time(pid)
    if started is not None and written / 1e9 < started - START_SLACK:
        return (f"{path} is older than process {pid}: an earlier process with the same "
                "pid left it, its names are not used")
    return ""


def process_start_time(pid: int) -> Optional[float]:
    """When the local process ``pid`` started (seconds since the epoch), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rpartition(")")[2].split()
        ticks = int(fields[19])  # field 22, starttime: clock ticks after boot
        with open("/proc/stat", encoding="ascii", errors="replace") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None
