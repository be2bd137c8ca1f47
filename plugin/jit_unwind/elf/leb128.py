"""LEB128 numbers as DWARF and .eh_frame store them: decoded from bytes at an offset,
returning the value and the offset after it (the readers of CFI, debug entries and
line tables share these; symfile/eh_frame.py writes them)."""

from __future__ import annotations  # annotations unevaluated: less work at load

from typing import Tuple


def read_uleb(data: bytes, at: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def read_sleb(data: bytes, at: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            if byte & 0x40:
                value -= 1 << shift
            return value, at


def sleb_end(data: bytes, at: int) -> int:
    """The offset after a signed number whose value is not needed."""
    while data[at] & 0x80:
        at += 1
    return at + 1
