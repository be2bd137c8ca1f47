"""``.eh_frame_hdr``'s binary search table: the start and FDE of every function with
call frame information, sorted by start, a few bytes each (the unwinder's rows,
``cfi_rows``, and the code without CFI, ``regions/nocfi``, read it)."""

import array
import sys
from typing import List, Optional, Tuple

# What every linker writes in .eh_frame_hdr: version 1, the .eh_frame pointer
# pcrel|sdata4, the count udata4, the table datarel|sdata4.
SEARCH_TABLE_HEADER = bytes([1, 0x1B, 0x03, 0x3B])


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
