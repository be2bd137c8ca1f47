"""Parse /proc/PID/maps text (and GDB's ``info proc mappings``) into mappings."""

from __future__ import annotations  # annotations unevaluated: less work at load

import re
from typing import List

from ..model import Mapping
from .process_root import host_path, other_root


def parse_proc_maps(text: str) -> List[Mapping]:
    """Turn the text of /proc/PID/maps into :class:`Mapping` objects."""
    mappings = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 5 or "-" not in fields[0]:
            continue
        start, _, end = fields[0].partition("-")
        try:
            mappings.append(Mapping(int(start, 16), int(end, 16), fields[1],
                                    fields[5].strip() if len(fields) > 5 else "",
                                    int(fields[2], 16)))
        except ValueError:
            continue
    return mappings


_PERMS = re.compile(r"[r-][w-][x-][ps]")


def parse_info_proc_mappings(text: str) -> List[Mapping]:
    """Turn GDB's ``info proc mappings`` (start, end, size, offset, perms, file; a
    core's lines too) into :class:`Mapping` objects; lines without perms are skipped."""
    mappings = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].startswith("0x") and fields[1].startswith("0x"):
            if not _PERMS.fullmatch(fields[4]):
                continue
            try:
                mappings.append(Mapping(int(fields[0], 16), int(fields[1], 16), fields[4],
                                        " ".join(fields[5:]), int(fields[3], 16)))
            except ValueError:
                continue
    return mappings


# The last text read and its mappings: between most stops (a step, a breakpoint hit
# again) nothing was mapped or unmapped, and the same list (the same object) lets the
# region map built from it be reused (discovery.build_region_map).
_last: list = [None, None, None]  # pid, text, mappings


def read_proc_maps(pid: int) -> List[Mapping]:
    """Mappings of a live local process; empty when /proc cannot tell.  A process that
    sees another root (a container) has its files named where they are read from here
    (/proc/PID/root/...).  The list is shared with later calls while the mappings stay
    the same: do not change it."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    if _last[0] == pid and _last[1] == text:
        return _last[2]
    mappings = parse_proc_maps(text)
    root = other_root(pid)
    if root:
        mappings = [Mapping(m.start, m.end, m.perms, host_path(root, m.path), m.offset)
                    for m in mappings]
    _last[:] = [pid, text, mappings]
    return mappings
