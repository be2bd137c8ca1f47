"""What a core's notes give the core reader, taken from a live process instead: its
mapped files (/proc/PID/maps, each opened from this host: through /proc/PID/root when
the process sees another root, through /proc/PID/map_files when the file was deleted
or replaced since), its threads' registers, its processor."""

import bisect
import platform
from typing import Dict, List, Optional

from ..coreread.image import (AARCH64_REGS, EM_AARCH64, EM_X86_64, USER_REGS, FileMapping,
                              ThreadRegisters)
from ..regions.procmaps import parse_proc_maps
from ..regions.process_root import host_path, other_root

MACHINES = {"x86_64": (EM_X86_64, USER_REGS), "aarch64": (EM_AARCH64, AARCH64_REGS)}
DELETED = " (deleted)"


def host_machine():
    """(ELF e_machine, NT_PRSTATUS register names) of this machine: a process read
    through ptrace runs on it (qemu-user's guests cannot be traced as such)."""
    return MACHINES.get(platform.machine(), MACHINES["x86_64"])


def host_paths(pid: int, mappings) -> Dict[str, str]:
    """The path each mapped file is read at here, by the name the process maps it
    under."""
    root = other_root(pid)
    found: Dict[str, str] = {}
    for mapping in sorted(mappings, key=lambda m: m.offset):
        path = mapping.path
        if path in found or not path.startswith("/"):
            continue
        if path.endswith(DELETED):
            # The file the process maps, whatever is at its path now.
            found[path] = f"/proc/{pid}/map_files/{mapping.start:x}-{mapping.end:x}"
        else:
            found[path] = host_path(root, path)
    return found


class LiveImage:
    """A live process as ``coreread``'s readers see a core: ``files`` (its file-backed
    mappings, by the path they are read at), ``threads`` (registers), ``machine``."""

    def __init__(self, pid: int, maps_text: str):
        self.pid = pid
        self.path = f"/proc/{pid}"
        self.machine, self.layout = host_machine()
        mappings = parse_proc_maps(maps_text)
        paths = host_paths(pid, mappings)
        self.files: List[FileMapping] = [
            FileMapping(m.start, m.end, paths[m.path], m.offset)
            for m in mappings if m.path in paths]
        self.files.sort(key=lambda f: f.start)
        self._file_starts = [f.start for f in self.files]
        self.threads: List[ThreadRegisters] = []

    def file_at(self, address: int) -> Optional[FileMapping]:
        index = bisect.bisect_right(self._file_starts, address) - 1
        if index >= 0 and address < self.files[index].end:
            return self.files[index]
        return None


def read_maps(pid: int) -> str:
    """/proc/PID/maps; OSError when the process is gone or may not be read."""
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
        return handle.read()
