"""Line numbers from a CPython 3.11+ location table (``PyCodeObject.co_linetable``).

The format is described in CPython's ``Objects/locations.md``.  The table is a run of
entries; each starts with a byte ``1 CCCC LLL``: ``CCCC`` the kind, ``LLL`` + 1 the number
of code units (``_Py_CODEUNIT``, 2 bytes) it covers, and continues with bytes whose
high bit is clear.  Only the start line matters here:

=========  ==================  ================================
kind       meaning             start line
=========  ==================  ================================
0-9        short form          previous line
10-12      one-line form       previous line + (kind - 10)
13         no column info      previous line + svarint
14         long form           previous line + svarint
15         no location         none (the previous line is kept)
=========  ==================  ================================

The "previous line" starts at ``co_firstlineno``.  Varints hold 6 bits per byte, least
significant first, bit 6 meaning "more"; an svarint is a varint ``v`` meaning ``-(v >> 1)``
when ``v & 1`` else ``v >> 1``.
"""

from typing import Iterator, Optional, Tuple

__all__ = ["iter_line_ranges", "line_for_index", "line_for_address"]

KIND_NO_COLUMNS = 13
KIND_LONG = 14
KIND_NONE = 15


def _varint(table: bytes, pos: int) -> int:
    value = shift = 0
    while pos < len(table):
        byte = table[pos]
        pos += 1
        value |= (byte & 63) << shift
        shift += 6
        if not byte & 64:
            break
    return value


def _svarint(table: bytes, pos: int) -> int:
    value = _varint(table, pos)
    return -(value >> 1) if value & 1 else value >> 1


def iter_line_ranges(linetable: bytes, firstlineno: int
                     ) -> Iterator[Tuple[int, int, Optional[int]]]:
    """``(start, end, line)`` per entry, in code units ``[start, end)``; ``line`` is None
    for "no location" entries.  Stops at the end of the table or at a malformed byte."""
    pos = 0
    unit = 0
    line = firstlineno
    size = len(linetable)
    while pos < size:
        first = linetable[pos]
        if not first & 0x80:
            return  # not an entry start: the table is corrupt or we read garbage
        kind = (first >> 3) & 15
        length = (first & 7) + 1
        if kind in (KIND_NO_COLUMNS, KIND_LONG):
            line += _svarint(linetable, pos + 1)
        elif 10 <= kind <= 12:
            line += kind - 10
        yield unit, unit + length, (None if kind == KIND_NONE else line)
        unit += length
        pos += 1
        while pos < size and not linetable[pos] & 0x80:
            pos += 1


def line_for_index(linetable: bytes, firstlineno: int, index: int) -> Optional[int]:
    """The line of the instruction ``index`` code units into ``co_code_adaptive``, as
    ``PyCode_Addr2Line`` computes it: ``firstlineno`` for a negative index (a frame that
    has not run its first instruction), None past the table or on "no location"."""
    if index < 0:
        return firstlineno
    for start, end, line in iter_line_ranges(linetable, firstlineno):
        if start <= index < end:
            return line
    return None


def line_for_address(linetable: bytes, firstlineno: int, code_start: int,
                     instr_address: int) -> Optional[int]:
    """The line of the ``_Py_CODEUNIT`` at ``instr_address`` of code starting at
    ``code_start`` (``&co->co_code_adaptive[0]``)."""
    return line_for_index(linetable, firstlineno, (instr_address - code_start) // 2)
