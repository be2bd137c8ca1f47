"""``--debugger none``'s line tables keep GDB's rules (``coreread/lines.py``), on line
programs built here byte by byte: the cases where "the last row at or below the pc"
alone gives another line than GDB (CPython 3.12's eval loop and glibc hit them)."""

import io
import struct

from jit_unwind.coreread.lines import LineTable

HEADER = {"minimum_instruction_length": 1, "line_base": -5, "line_range": 14,
          "opcode_base": 13, "standard_opcode_lengths": [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1],
          "default_is_stmt": 1}


def uleb(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def sleb(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte | (0 if done else 0x80))
        if done:
            return bytes(out)


class Program:
    """A line program as pyelftools hands it over: a header and the opcodes' bytes."""

    def __init__(self):
        self.header, self.code, self.line = HEADER, bytearray(), 1

    def address(self, value):
        self.code += b"\0" + uleb(9) + b"\x02" + struct.pack("<Q", value)
        return self

    def file(self, number):
        self.code += b"\x04" + uleb(number)
        return self

    def row(self, line, advance=0, negate=False):
        """Advance the address, go to ``line``, flip is_stmt if asked, emit a row."""
        if advance:
            self.code += b"\x02" + uleb(advance)
        self.code += b"\x03" + sleb(line - self.line)
        self.line = line
        if negate:
            self.code += b"\x06"
        self.code += b"\x01"
        return self

    def end(self, advance):
        self.code += b"\x02" + uleb(advance) + b"\0" + uleb(1) + b"\x01"
        self.line = 1
        return self

    def table(self):
        self.stream = io.BytesIO(bytes(self.code))
        self.program_start_offset, self.program_end_offset = 0, len(self.code)
        return LineTable(self)


def test_a_file_change_at_an_address_without_a_statement_row_is_kept():
    # CPython 3.12: methodobject.h:50 (not a statement), then bytecodes.c:2904 at the
    # same address: GDB ends methodobject.h's run there, bytecodes.c owns the pc after.
    table = (Program().address(0x1000).file(2).row(50, negate=True).row(50, advance=5)
             .file(1).row(2904).row(2908, advance=5).end(3).table())
    assert table.row_at(0x1009)[:2] == (1, 2904)
    assert table.row_at(0x1003)[:2] == (2, 50)
    assert table.row_at(0x100A)[:2] == (1, 2908)
    assert table.row_at(0x2000) is None


def test_a_non_statement_file_change_after_a_statement_row_is_dropped():
    table = (Program().address(0x3000).file(1).row(10).file(2).row(20, negate=True)
             .file(1).row(11, advance=4, negate=True).end(4).table())
    assert table.row_at(0x3002)[:2] == (1, 10)  # not file 2's line 20
    assert table.row_at(0x3005)[:2] == (1, 11)


def test_a_statement_row_wins_over_a_later_row_at_its_address():
    table = (Program().address(0x5000).file(1).row(30).row(31, negate=True)
             .row(40, advance=8, negate=True).end(4).table())
    assert table.row_at(0x5004)[:2] == (1, 30)
    assert table.row_at(0x5009)[:2] == (1, 40)


def test_sequences_are_decoded_as_far_as_asked_and_on_later():
    program = (Program().address(0x9000).file(1).row(7).end(16)
               .address(0x7000).file(1).row(70).row(71, advance=8).end(8))
    table = program.table()
    assert table.row_at(0x7009)[:2] == (1, 71)  # the second sequence, decoded to its end
    assert table.row_at(0x9001)[:2] == (1, 7)
    assert table.row_at(0x7010) is None  # past the second sequence's end
