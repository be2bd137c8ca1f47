"""A compilation unit's line table as GDB keeps it, decoded from ``.debug_line``.

The line program is run here (pyelftools made an object per row, 0.4 s for CPython's
ceval.c alone, where this loop keeps a tuple), by one loop that adds each row to the
tables as it decodes it."""

import bisect
from typing import Dict, List, Optional, Tuple

from ..elf.leb128 import read_sleb, read_uleb

Row = Tuple[int, int, bool]  # address, line (0: the end of a run), is_stmt

# Standard opcodes (DWARF 2-5).
(COPY, ADVANCE_PC, ADVANCE_LINE, SET_FILE, SET_COLUMN, NEGATE_STMT, BASIC_BLOCK,
 CONST_ADD_PC, FIXED_ADVANCE_PC, PROLOGUE_END, EPILOGUE_BEGIN, SET_ISA) = range(1, 13)
END_SEQUENCE, SET_ADDRESS = 1, 2  # extended opcodes






class Sequence:
    """One sequence of the program (a run of contiguous code): per file, its rows in
    address order."""

    def __init__(self, start: int):
        self.start = start
        self.end: Optional[int] = None  # set at its end_sequence row
        self.last = start  # the highest address decoded so far
        self.tables: Dict[int, List[Row]] = {}

    def holds(self, address: int) -> bool:
        """Whether ``address`` is inside, as far as decoded (a sequence's addresses
        only grow)."""
        return self.start <= address and (address < self.end if self.end is not None
                                          else address < self.last)

    def row_at(self, address: int) -> Optional[Tuple[int, int, bool]]:
        best = None
        for file, found in self.tables.items():
            at = bisect.bisect_right([row[0] for row in found], address) - 1
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


class LineTable:
    """A unit's rows as GDB's line table keeps them (``lnp_state_machine`` and
    ``buildsym``): one table per file, in address order; a row leaving a file ends
    that file's table there (a line-0 marker replacing its rows at that address); a
    non-statement row switching files at an address that already had a statement row
    is dropped, and so are rows of line 0.  A pc's line is the row at or below it with
    the highest address over every file's table (GDB's ``find_pc_sect_line``): only
    the sequence holding the pc has such rows, so the program is decoded only until
    that sequence is past the pc (on for the next pc asked)."""

    def __init__(self, program) -> None:
        header = program.header
        stream = program.stream
        stream.seek(program.program_start_offset)
        self._data = stream.read(program.program_end_offset - program.program_start_offset)
        self._step = header["minimum_instruction_length"]
        self._line_base, self._line_range = header["line_base"], header["line_range"]
        self._opcode_base = header["opcode_base"]
        self._lengths = list(header["standard_opcode_lengths"])
        self._default_is_stmt = bool(header["default_is_stmt"])
        # Where the decoding stopped: the next opcode, the state machine's registers.
        self._at = 0
        self._registers = (0, 1, 1, self._default_is_stmt)  # address, file, line, is_stmt
        self.sequences: List[Sequence] = []  # decoded to their end
        self._current: Optional[Sequence] = None
        self._last_file: Optional[int] = None
        self._last_address: Optional[int] = None
        self._stmt_at_address = False

    def _add(self, address: int, file: int, line: int, is_stmt: bool, end: bool) -> None:
        current = self._current
        if current is None:
            current = self._current = Sequence(address)
        changed = self._last_file != file
        ignore = not end and (line == 0 or (
            changed and self._last_address == address and not is_stmt
            and self._stmt_at_address))
        if ((changed and not ignore) or end) and self._last_file is not None:
            _end_marker(current.tables.setdefault(self._last_file, []), address)
        if not end and not ignore:
            current.tables.setdefault(file, []).append((address, line, is_stmt))
            self._last_file = file
        if self._last_address != address:
            self._stmt_at_address, self._last_address = False, address
        self._stmt_at_address |= is_stmt
        if address > current.last:
            current.last = address
        if end:  # GDB's state machine starts afresh for each sequence
            current.end = address
            self.sequences.append(current)
            self._current = self._last_file = self._last_address = None
            self._stmt_at_address = False

    def row_at(self, address: int) -> Optional[Tuple[int, int, bool]]:
        """(file, line, is_stmt) GDB gives ``address``, None without a line."""
        for sequence in self.sequences:
            if sequence.holds(address):
                return sequence.row_at(address)
        return self._decode_to(address)

    def _decode_to(self, pc: int) -> Optional[Tuple[int, int, bool]]:
        """Run the line program on from where it stopped, each row added to the tables
        (``_add``; its common case inline, with the state it touches in locals: the
        loop's hot path), until the sequence holding ``pc`` is decoded past it; its row
        then, None at the program's end."""
        data, size = self._data, len(self._data)
        step, line_range = self._step, self._line_range
        opcode_base, lengths = self._opcode_base, self._lengths
        default_is_stmt = self._default_is_stmt
        const_add = ((255 - opcode_base) // line_range) * step
        column_operands = lengths[SET_COLUMN - 1] if len(lengths) >= SET_COLUMN else 0
        # A special opcode's address and line advance, by opcode.
        address_advance = [((op - opcode_base) // line_range) * step
                           if op >= opcode_base else 0 for op in range(256)]
        line_advance = [self._line_base + (op - opcode_base) % line_range
                        if op >= opcode_base else 0 for op in range(256)]
        at = self._at
        address, file, line, is_stmt = self._registers
        # _add's state, mirrored in locals (written back around each call of _add)
        current, last_file, last_address, stmt_at, last_rows, rows, top = \
            self._state_locals(file)
        hit: Optional[Sequence] = None  # the sequence decoded past the pc
        while at < size:
            op = data[at]
            at += 1
            if op >= opcode_base:
                address += address_advance[op]
                line += line_advance[op]
                if line and rows is not None:
                    rows.append((address, line, is_stmt))
                    if last_address != address:
                        stmt_at, last_address = is_stmt, address
                    elif is_stmt:
                        stmt_at = True
                    if address > top:
                        top = address
                        if address > pc and current.start <= pc:
                            hit = current
                            break
                    continue
                end = False
            elif op == SET_COLUMN and column_operands == 1:  # the commonest other one
                while data[at] & 0x80:
                    at += 1
                at += 1
                continue
            elif op == COPY:
                end = False
            elif op == NEGATE_STMT:
                is_stmt = not is_stmt
                continue
            elif op == ADVANCE_LINE:
                value = data[at]
                if value < 0x80:  # one byte
                    line += value - 0x80 if value & 0x40 else value
                    at += 1
                else:
                    value, at = read_sleb(data, at)
                    line += value
                continue
            elif op == SET_FILE:
                file = data[at]
                if file < 0x80:
                    at += 1
                else:
                    file, at = read_uleb(data, at)
                rows = last_rows if file == last_file else None
                continue
            elif op == 0:
                length = data[at]
                if length < 0x80:
                    at += 1
                else:
                    length, at = read_uleb(data, at)
                body = at
                at += length
                if length == 0:
                    continue
                extended = data[body]
                if extended == SET_ADDRESS:
                    address = int.from_bytes(data[body + 1:at], "little")
                if extended != END_SEQUENCE:
                    continue
                end = True
            else:
                if op == ADVANCE_PC:
                    value, at = read_uleb(data, at)
                    address += value * step
                elif op == CONST_ADD_PC:
                    address += const_add
                elif op == FIXED_ADVANCE_PC:
                    address += data[at] | data[at + 1] << 8
                    at += 2
                elif op not in (BASIC_BLOCK, PROLOGUE_END, EPILOGUE_BEGIN):
                    # SET_ISA and opcodes unknown here: skip their operands
                    for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):
                        _, at = read_uleb(data, at)
                continue
            # A row other than a special opcode's common one: the same as above, or
            # through _add with the locals written back and read again.
            if not end and line and rows is not None:
                rows.append((address, line, is_stmt))
                if last_address != address:
                    stmt_at, last_address = is_stmt, address
                elif is_stmt:
                    stmt_at = True
                if address > top:
                    top = address
            elif not end and line and current is not None \
                    and not (last_address == address and not is_stmt and stmt_at):
                # A row in another file than the last row's (_add's case too): that
                # file's run ends here.
                if last_rows is not None:
                    _end_marker(last_rows, address)
                last_rows = rows = current.tables.setdefault(file, [])
                rows.append((address, line, is_stmt))
                last_file = file
                if last_address != address:
                    stmt_at, last_address = is_stmt, address
                elif is_stmt:
                    stmt_at = True
                if address > top:
                    top = address
            else:
                self._keep_locals(current, last_file, last_address, stmt_at, top)
                self._add(address, file, line, is_stmt, end)
                current, last_file, last_address, stmt_at, last_rows, rows, top = \
                    self._state_locals(file)
            if end:  # (_add ended the sequence: the locals were read again)
                address, file, line, is_stmt = 0, 1, 1, default_is_stmt
                if self.sequences[-1].holds(pc):
                    self._at, self._registers = at, (address, file, line, is_stmt)
                    return self.sequences[-1].row_at(pc)
            elif address > pc and current is not None and current.start <= pc:
                hit = current
                break
        self._keep_locals(current, last_file, last_address, stmt_at, top)
        self._at, self._registers = at, (address, file, line, is_stmt)
        return hit.row_at(pc) if hit is not None else None

    def _state_locals(self, file: int):
        """_add's state as the decoding loop keeps it in locals: the current sequence,
        the last row's file, address and is_stmt-at-address, that file's table, the
        table rows of ``file`` go to while they stay in that file (else None), and the
        highest address of the sequence so far."""
        current, last_file = self._current, self._last_file
        last_rows = current.tables[last_file] \
            if current is not None and last_file is not None else None
        return (current, last_file, self._last_address, self._stmt_at_address, last_rows,
                last_rows if file == last_file else None,
                current.last if current is not None else 0)

    def _keep_locals(self, current, last_file: Optional[int], last_address: int,
                     stmt_at: bool, top: int) -> None:
        """The loop's locals written back where _add (and the next decode) reads them."""
        if current is not None:
            current.last = top
        self._current, self._last_file = current, last_file
        self._last_address, self._stmt_at_address = last_address, stmt_at


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
