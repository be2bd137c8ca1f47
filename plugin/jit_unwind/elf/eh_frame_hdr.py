"""``.eh_frame_hdr``'s binary search table: the start and FDE of every function with
call frame information, sorted by start, a few bytes each (the unwinder's rows,
``cfi_rows``, and the code without CFI, ``regions/nocfi``, read it)."""

from __future__ import annotations  # annotations unevaluated: less work at load

import array
import bisect
import sys
from typing import Iterator, List, Optional, Sequence, Tuple

# What every linker writes in .eh_frame_hdr: version 1, the .eh_frame pointer
# pcrel|sdata4, the count udata4, the table datarel|sdata4.
SEARCH_TABLE_HEADER = bytes([1, 0x1B, 0x03, 0x3B])
# The struct formats of the pointer encodings (DW_EH_PE_*) by their low nibble, for the
# readers of .eh_frame's CIEs and FDEs (cfi_rows, regions/nocfi).
POINTER_FORMATS = {0x00: "<Q", 0x02: "<H", 0x03: "<I", 0x04: "<Q", 0x0A: "<h", 0x0B: "<i",
                   0x0C: "<q"}


def table_words(header: bytes, limit: int) -> Optional[array.array]:
    """The table as its (start, FDE) pairs of 32-bit words, relative to
    ``.eh_frame_hdr``'s address, as they are in the file; None for a table in another
    encoding or of more than ``limit`` entries.  Raises ValueError for a header cut
    short."""
    if len(header) < 4:
        raise ValueError("an .eh_frame_hdr cut short")
    if header[:4] != SEARCH_TABLE_HEADER:
        return None
    if len(header) < 12:
        raise ValueError("an .eh_frame_hdr cut short")
    count = int.from_bytes(header[8:12], "little")
    if count > limit or 12 + count * 8 > len(header):
        return None
    table = array.array("i")
    table.frombytes(header[12:12 + count * 8])
    if sys.byteorder == "big":
        table.byteswap()
    return table


def read_search_table(header: bytes, header_address: int, frames_address: int,
                      limit: int) -> Optional[Tuple[List[int], List[int]]]:
    """(FDE starts, FDE offsets in .eh_frame), sorted by start; None and ValueError as
    ``table_words`` (the offsets are the caller's to check against its .eh_frame)."""
    table = table_words(header, limit)
    if table is None:
        return None
    return ([header_address + value for value in table[0::2]],
            [header_address + value - frames_address for value in table[1::2]])


class FdeIndex:
    """FDE starts and their offsets in ``.eh_frame``, sorted by start, as sequences of
    numbers each shifted by a base: a search table's words stay as they are in the
    file (relative to ``.eh_frame_hdr``; bases its address and its distance to
    ``.eh_frame``), where lists of libc's 3,000 or node's 76,000 absolute addresses
    would be built at a process's first ``bt``."""

    __slots__ = ("starts", "offsets", "start_base", "offset_base")

    def __init__(self, starts: Sequence[int], offsets: Sequence[int], start_base: int = 0,
                 offset_base: int = 0):
        self.starts, self.offsets = starts, offsets
        self.start_base, self.offset_base = start_base, offset_base

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> Tuple[int, int]:
        """(start, offset) of entry ``index``."""
        return self.starts[index] + self.start_base, self.offsets[index] + self.offset_base

    def __iter__(self) -> Iterator[Tuple[int, int]]:
        start_base, offset_base = self.start_base, self.offset_base
        for start, offset in zip(self.starts, self.offsets):
            yield start + start_base, offset + offset_base

    def before(self, address: int) -> int:
        """The index of the last entry starting at or before ``address``, -1 without."""
        return bisect.bisect_right(self.starts, address - self.start_base) - 1

    def offsets_within(self, size: int) -> bool:
        """True when every offset lies in [0, ``size``)."""
        return not self.offsets or (min(self.offsets) + self.offset_base >= 0
                                    and max(self.offsets) + self.offset_base < size)


def search_index(header: bytes, header_address: int, frames_address: int,
                 limit: int) -> Optional[FdeIndex]:
    """The search table as an FdeIndex over its words; None and ValueError as
    ``table_words``."""
    table = table_words(header, limit)
    if table is None:
        return None
    return FdeIndex(table[0::2], table[1::2], header_address, header_address - frames_address)
