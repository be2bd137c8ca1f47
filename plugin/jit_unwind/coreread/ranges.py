"""DWARF range lists read with struct: ``.debug_ranges`` (DWARF 2-4) and
``.debug_rnglists`` (DWARF 5, 32-bit, 8-byte addresses), as [start, end) pairs."""

from typing import Callable, List, Tuple

from ..elf.leb128 import read_uleb
from .dies import UnsupportedDwarf

MAX_ENTRIES = 100_000  # in one list: a bound against garbage
BASE_SELECTION = 0xFFFFFFFFFFFFFFFF
(RLE_END_OF_LIST, RLE_BASE_ADDRESSX, RLE_STARTX_ENDX, RLE_STARTX_LENGTH, RLE_OFFSET_PAIR,
 RLE_BASE_ADDRESS, RLE_START_END, RLE_START_LENGTH) = range(8)


def _u64(data: bytes, at: int) -> int:
    if at + 8 > len(data):
        raise UnsupportedDwarf("a range list past its section")
    return int.from_bytes(data[at:at + 8], "little")


def ranges_v4(data: bytes, offset: int, base: int) -> List[Tuple[int, int]]:
    """The list at ``offset`` of ``.debug_ranges``; ``base``: the unit's low pc."""
    found: List[Tuple[int, int]] = []
    at = offset
    for _ in range(MAX_ENTRIES):
        begin, end = _u64(data, at), _u64(data, at + 8)
        at += 16
        if begin == 0 and end == 0:
            return found
        if begin == BASE_SELECTION:
            base = end
        else:
            found.append((base + begin, base + end))
    raise UnsupportedDwarf("a range list without its end")


def ranges_v5(data: bytes, offset: int, base: int, address: Callable[[int], int]
              ) -> List[Tuple[int, int]]:
    """The list at ``offset`` of ``.debug_rnglists``; ``base``: the unit's low pc;
    ``address(index)``: entry ``index`` of the unit's ``.debug_addr`` table."""
    found: List[Tuple[int, int]] = []
    at = offset
    for _ in range(MAX_ENTRIES):
        if at >= len(data):
            raise UnsupportedDwarf("a range list past its section")
        kind = data[at]
        at += 1
        if kind == RLE_END_OF_LIST:
            return found
        if kind == RLE_BASE_ADDRESSX:
            index, at = read_uleb(data, at)
            base = address(index)
        elif kind == RLE_STARTX_ENDX:
            first, at = read_uleb(data, at)
            last, at = read_uleb(data, at)
            found.append((address(first), address(last)))
        elif kind == RLE_STARTX_LENGTH:
            first, at = read_uleb(data, at)
            length, at = read_uleb(data, at)
            start = address(first)
            found.append((start, start + length))
        elif kind == RLE_OFFSET_PAIR:
            begin, at = read_uleb(data, at)
            end, at = read_uleb(data, at)
            found.append((base + begin, base + end))
        elif kind == RLE_BASE_ADDRESS:
            base = _u64(data, at)
            at += 8
        elif kind == RLE_START_END:
            found.append((_u64(data, at), _u64(data, at + 8)))
            at += 16
        elif kind == RLE_START_LENGTH:
            start = _u64(data, at)
            length, at = read_uleb(data, at + 8)
            found.append((start, start + length))
        else:
            raise UnsupportedDwarf(f"range list entry kind {kind}")
    raise UnsupportedDwarf("a range list without its end")
