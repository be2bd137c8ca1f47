"""A compilation unit's line table as GDB keeps it, decoded from ``.debug_line``.

The line program is run here (pyelftools reads only its header): pyelftools makes an
object per row, 0.4 s for CPython's ceval.c alone, where this loop keeps a tuple."""

import bisect
from typing import Dict, List, Optional, Tuple

Row = Tuple[int, int, bool]  # address, line (0: the end of a run), is_stmt

# Standard opcodes (DWARF 2-5).
(COPY, ADVANCE_PC, ADVANCE_LINE, SET_FILE, SET_COLUMN, NEGATE_STMT, BASIC_BLOCK,
 CONST_ADD_PC, FIXED_ADVANCE_PC, PROLOGUE_END, EPILOGUE_BEGIN, SET_ISA) = range(1, 13)
END_SEQUENCE, SET_ADDRESS = 1, 2  # extended opcodes


def _uleb(data: bytes, at: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _sleb(data: bytes, at: int) -> Tuple[int, int]:
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


def rows(program):
    """(address, file, line, is_stmt, end_sequence) of each row of a pyelftools
    ``LineProgram`` (its header; the opcodes are decoded here)."""
    header = program.header
    stream = program.stream
    stream.seek(program.program_start_offset)
    data = stream.read(program.program_end_offset - program.program_start_offset)
    step = header["minimum_instruction_length"]
    line_base, line_range = header["line_base"], header["line_range"]
    opcode_base = header["opcode_base"]
    lengths = list(header["standard_opcode_lengths"])
    default_is_stmt = bool(header["default_is_stmt"])
    const_add = ((255 - opcode_base) // line_range) * step
    address, file, line, is_stmt = 0, 1, 1, default_is_stmt
    at, size = 0, len(data)
    while at < size:
        op = data[at]
        at += 1
        if op >= opcode_base:
            adjusted = op - opcode_base
            address += (adjusted // line_range) * step
            line += line_base + adjusted % line_range
            yield address, file, line, is_stmt, False
        elif op == 0:
            length, at = _uleb(data, at)
            body = at
            at += length
            if length == 0:
                continue
            extended = data[body]
            if extended == END_SEQUENCE:
                yield address, file, line, is_stmt, True
                address, file, line, is_stmt = 0, 1, 1, default_is_stmt
            elif extended == SET_ADDRESS:
                address = int.from_bytes(data[body + 1:at], "little")
        elif op == COPY:
            yield address, file, line, is_stmt, False
        elif op == ADVANCE_PC:
            value, at = _uleb(data, at)
            address += value * step
        elif op == ADVANCE_LINE:
            value, at = _sleb(data, at)
            line += value
        elif op == SET_FILE:
            file, at = _uleb(data, at)
        elif op == NEGATE_STMT:
            is_stmt = not is_stmt
        elif op == CONST_ADD_PC:
            address += const_add
        elif op == FIXED_ADVANCE_PC:
            address += data[at] | data[at + 1] << 8
            at += 2
        elif op in (BASIC_BLOCK, PROLOGUE_END, EPILOGUE_BEGIN):
            pass
        else:  # SET_COLUMN, SET_ISA and opcodes unknown here: skip their operands
            for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):
                _, at = _uleb(data, at)


class LineTable:
    """A unit's rows as GDB's line table keeps them (``lnp_state_machine`` and
    ``buildsym``): one table per file, sorted by address; a row leaving a file ends
    that file's table there (a line-0 marker replacing its rows at that address); a
    non-statement row switching files at an address that already had a statement row
    is dropped, and so are rows of line 0.  A pc's line is the row at or below it with
    the highest address over every file's table (GDB's ``find_pc_sect_line``)."""

    def __init__(self, program):
        tables: Dict[int, List[Row]] = {}
        last_file = last_address = None
        stmt_at_address = False
        for address, file, line, is_stmt, end in rows(program):
            changed = last_file != file
            ignore = not end and (line == 0 or (
                changed and last_address == address and not is_stmt and stmt_at_address))
            if ((changed and not ignore) or end) and last_file is not None:
                _end_marker(tables.setdefault(last_file, []), address)
            if not end and not ignore:
                tables.setdefault(file, []).append((address, line, is_stmt))
                last_file = file
            if last_address != address:
                stmt_at_address, last_address = False, address
            stmt_at_address |= is_stmt
            if end:  # GDB's state machine starts afresh for each sequence
                last_file = last_address = None
                stmt_at_address = False
        self.tables = []
        for file, found in tables.items():
            found.sort(key=lambda row: (row[0], row[1] != 0))  # markers first at a pc
            self.tables.append((file, [row[0] for row in found], found))

    def row_at(self, address: int) -> Optional[Tuple[int, int, bool]]:
        """(file, line, is_stmt) GDB gives ``address``, None without a line."""
        best = None
        for file, addresses, found in self.tables:
            at = bisect.bisect_right(addresses, address) - 1
            if at < 0:
                continue
            row = found[at]
            if best is not None and (row[0] < best[0] or (row[0] == best[0] and
                                                          (row[1] == 0 or best[1]))):
                continue
            if not row[2]:  # GDB prefers a statement row at the same address
                back = at
                while back > 0 and found[back - 1][0] == row[0] and found[back - 1][1] != 0 \
                        and not found[back][2]:
                    back -= 1
                if found[back][2]:
                    row = found[back]
            best = (row[0], row[1], row[2], file)
        if best is None or best[1] == 0:
            return None
        return best[3], best[1], best[2]


def _end_marker(found: List[Row], address: int) -> None:
    """GDB's end of a file's run at ``address``: the rows there give way to a line-0
    marker (none for an empty run)."""
    last_line = None
    while found:
        last_line = found[-1][1]
        if found[-1][0] != address:
            break
        found.pop()
    if last_line:
        found.append((address, 0, True))
