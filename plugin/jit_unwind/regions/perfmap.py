"""Read perf maps (/tmp/perf-PID.map): ``START SIZE NAME`` per line, hex numbers."""

import os
from typing import Dict, List, Tuple

from ..model import Region

# Parsed maps keyed by path, kept while the file's size and mtime stay the same: a
# V8 or CPython perf map can have many thousands of lines and only grows.
_cache: Dict[str, Tuple[Tuple[int, float], List[Region]]] = {}


def perf_map_path(pid: int) -> str:
    return f"/tmp/perf-{pid}.map"


def parse_perf_map(text: str) -> List[Region]:
    entries = []
    for line in text.splitlines():
        fields = line.split(None, 2)
        if len(fields) < 3:
            continue
        try:
            start, size = int(fields[0], 16), int(fields[1], 16)
        except ValueError:
            continue
        if size > 0:
            entries.append(Region(start, start + size, "perf-map", fields[2].strip(),
                                  sequence=len(entries)))
    return entries


def read_perf_map(pid: int) -> List[Region]:
    """Entries of the perf map of ``pid``; empty when there is none."""
    path = perf_map_path(pid)
    try:
        stat = os.stat(path)
    except OSError:
        return []
    key = (stat.st_size, stat.st_mtime)
    cached = _cache.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            entries = parse_perf_map(handle.read())
    except OSError:
        return []
    _cache[path] = (key, entries)
    return entries
