"""The perf maps and perf jitdumps on this machine, where the plugin looks for them
(``regions/perfmap.py``, ``regions/jitdump.py``): /tmp, the current directory, perf's
copies under ~/.debug/jit.  Each with its pid, whether that process still runs, and
whether the plugin would take it for that process's."""

import os
import re
from dataclasses import dataclass
from typing import List, Optional

from ..regions.perfmap import process_start_time, START_SLACK

_NAME = re.compile(r"^(?:perf-(\d+)\.map|jit-(\d+)\.dump)$")
# Enough for any machine's leftovers; a directory is never read past this many entries.
MAX_ENTRIES = 10000
MAX_DEBUG_JIT_DIRS = 256


@dataclass
class JitFile:
    path: str
    pid: int
    kind: str  # "perf map" or "jitdump"
    size: int
    mtime: float
    running: bool
    # A process runs with this pid but started after the file was last written: an
    # earlier process with the same pid left it, and the plugin ignores it.
    stale: bool


def _scan(directory: str, kinds: str) -> List[JitFile]:
    found = []
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_ENTRIES:
                    break
                match = _NAME.match(entry.name)
                if not match or (match.group(1) and "map" not in kinds):
                    continue
                try:
                    if not entry.is_file():
                        continue
                    status = entry.stat()
                except OSError:
                    continue
                pid = int(match.group(1) or match.group(2))
                found.append(_describe(entry.path, pid, status))
    except OSError:
        pass
    return found


def _describe(path: str, pid: int, status: os.stat_result) -> JitFile:
    kind = "perf map" if path.endswith(".map") else "jitdump"
    running = os.path.isdir(f"/proc/{pid}")
    started = process_start_time(pid) if running else None
    stale = started is not None and status.st_mtime < started - START_SLACK
    return JitFile(path, pid, kind, status.st_size, status.st_mtime, running, stale)


def _debug_jit(home: Optional[str]) -> List[str]:
    """perf's copies of jitdumps (``perf inject --jit``): ~/.debug/jit/*/."""
    root = os.path.join(home or os.path.expanduser("~"), ".debug", "jit")
    try:
        with os.scandir(root) as entries:
            names = sorted((entry.path for entry in entries), reverse=True)
    except OSError:
        return []
    return names[:MAX_DEBUG_JIT_DIRS]


def jit_files(cwd: Optional[str] = None, home: Optional[str] = None) -> List[JitFile]:
    """Every perf map and jitdump where the plugin looks, newest first."""
    cwd = os.path.realpath(cwd or os.getcwd())
    files = _scan("/tmp", "map dump")
    if cwd != "/tmp":
        files += _scan(cwd, "dump")
    for directory in _debug_jit(home or os.environ.get("HOME")):
        files += _scan(directory, "dump")
    return sorted(files, key=lambda file: -file.mtime)
