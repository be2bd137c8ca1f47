"""Parse /proc/PID/maps text into mappings."""

from typing import List

from . import Mapping


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


def read_proc_maps(pid: int) -> List[Mapping]:
    """Mappings of a live local process; empty when /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
            return parse_proc_maps(handle.read())
    except OSError:
        return []
