"""A jitdump writer's own unwind rules in the symbol file's .eh_frame (LLDB's file):
re-encoded for our CIE, the rows LLDB reads from our file are the writer's rows."""

import struct

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.model import Region
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.jitdump import CodeLoad, UnwindingInfo
from jit_unwind.symfile.build import symbol_file_bytes, symbol_file_regions
from jit_unwind.symfile.eh_frame import sleb128, uleb128
from jit_unwind.target import BytesMemory
from jit_unwind.unwind.jitdump_cfi import fde_entries

JIT = 0x7F00_0000_0000
# tests/fixtures/jitdump_jit.c's function: push rbp; push rbx; mov rbx, rsp;
# and rsp, -32; sub rsp, 32; xor ebp, ebp; call rsi; mov rsp, rbx; pop rbx; pop rbp; ret
CODE = bytes.fromhex("55" "53" "4889e3" "4883e4e0" "4883ec20" "31ed" "ffd6" "4889dc"
                     "5b" "5d" "c3")


def _writer_eh_frame(code_addr, size, data_align, rows):
    """A writer's .eh_frame laid out as perf does (after the code, pc-relative FDE
    pointers), its CIE with ``data_align``; ``rows``: the FDE's instructions."""
    eh_frame = code_addr + ((size + 7) & ~7)
    cie_body = (struct.pack("<IB", 0, 1) + b"zR\0" + uleb128(1) + sleb128(data_align)
                + uleb128(16) + uleb128(1) + b"\x1b"
                + b"\x0c\x07\x08"  # def_cfa rsp, 8
                + bytes([0x80 | 16]) + uleb128(8 // -data_align))  # return address at cfa-8
    cie_body += b"\0" * (-(len(cie_body) + 4) % 8)
    cie = struct.pack("<I", len(cie_body)) + cie_body
    at = len(cie)
    fde_body = struct.pack("<I", at + 4)  # back to the CIE
    fde_body += struct.pack("<iI", code_addr - (eh_frame + at + 8), size) + b"\0" + rows
    fde_body += b"\0" * (-(len(fde_body) + 4) % 8)
    return cie + struct.pack("<I", len(fde_body)) + fde_body + b"\0\0\0\0"


def _file_rows(data):
    elf = ELFFile(__import__("io").BytesIO(data))
    tables = {}
    for entry in elf.get_dwarf_info(follow_links=False).EH_CFI_entries():
        header = getattr(entry, "header", None)
        if header is not None and "initial_location" in header:
            tables[header["initial_location"]] = (header["address_range"],
                                                  _comparable(entry.get_decoded().table))
    return tables


def _comparable(rows):
    """Rows (the plugin's reader's or pyelftools') as plain values."""
    def value(arg):
        return bytes(arg) if isinstance(arg, (list, bytes)) else arg
    return [(row["pc"], (row["cfa"].reg, row["cfa"].offset, value(row["cfa"].expr)),
             {reg: (rule.type, value(rule.arg)) for reg, rule in row.items()
              if isinstance(reg, int)})
            for row in rows]


def _symbol_file(eh_frame, code=CODE):
    load = CodeLoad("jit::realigned", JIT, len(code), code, 0, 1, JIT, sequence=0,
                    unwinding=UnwindingInfo(eh_frame, b"", 0))
    regions = RegionMap([Mapping(JIT, JIT + 0x1000, "r-xp", "")],
                        [Region(JIT, JIT + len(code), "jitdump", "jit::realigned")], ())
    regions.add_unwind_records([load])
    functions = symbol_file_regions(regions)
    data = symbol_file_bytes(BytesMemory({JIT: code + bytes(0x1000 - len(code))}),
                             regions, functions)
    return load, data


# The fixture's rows: cfa rsp+16 and rbp at cfa-16; cfa rsp+24 and rbx at cfa-24;
# cfa = rbx+24 (the stack realigned); back to rsp+24, rsp+16, rsp+8.
def _rows(factor):
    return (b"\x41\x0e\x10" + bytes([0x86]) + uleb128(16 // factor)
            + b"\x41\x0e\x18" + bytes([0x83]) + uleb128(24 // factor)
            + b"\x43\x0d\x03" + b"\x4c\x0c\x07\x18" + b"\x44\x0e\x10" + b"\x41\x0e\x08")


@pytest.mark.parametrize("data_align", [-8, -4, -1])
def test_the_writers_rows_are_the_files_rows(data_align):
    eh_frame = _writer_eh_frame(JIT, len(CODE), data_align, _rows(-data_align))
    load, data = _symbol_file(eh_frame)
    ((start, end, entry),) = fde_entries(eh_frame, load.eh_frame_address)
    assert (start, end) == (JIT, JIT + len(CODE))
    writer = _comparable(entry)
    assert _file_rows(data) == {JIT: (len(CODE), writer)}
    assert any(cfa[0] == 3 for _pc, cfa, _rules in writer)  # cfa = rbx + 24 is there


def test_a_rule_our_cie_cannot_say_leaves_the_writers_fde_out():
    # rbp at cfa-12 (data alignment -4): no multiple of our -8.  The code is decoded
    # instead, as without a record, up to the instruction the decoder does not follow.
    rows = b"\x41\x0e\x10" + bytes([0x86]) + uleb128(3)
    eh_frame = _writer_eh_frame(JIT, len(CODE), -4, rows)
    _load, data = _symbol_file(eh_frame)
    tables = _file_rows(data)
    assert set(tables) == {JIT}
    size, rows = tables[JIT]
    assert size < len(CODE)  # the decoder's rule, shorter than the writer's FDE
    assert all(cfa[0] == 7 for _pc, cfa, _rules in rows)


def test_identical_tables_are_read_once(monkeypatch):
    """CPython's -X perf_jit trampolines: the same table at the same distance from each
    function's code.  One parse serves all; each gets its own addresses."""
    from jit_unwind.symfile import table_rules
    from jit_unwind.unwind import jitdump_cfi
    reads, read_fdes = [], jitdump_cfi.read_fdes

    def counting(eh_frame, address):
        reads.append(address)
        return read_fdes(eh_frame, address)

    monkeypatch.setattr(jitdump_cfi, "read_fdes", counting)
    starts = [JIT + index * 64 for index in range(50)]
    loads = {start: CodeLoad(f"f{index}", start, len(CODE), CODE, index, 1, start,
                             sequence=index, unwinding=UnwindingInfo(
                                 _writer_eh_frame(start, len(CODE), -8, _rows(8)), b"", 0))
             for index, start in enumerate(starts)}
    rules = table_rules.JitdumpRules(loads.get)
    placed = [rules(start, start + len(CODE)) for start in starts]
    assert len(reads) == 1
    assert [p[0][:2] for p in placed] == [(start, len(CODE)) for start in starts]
    assert len({p[0][2] for p in placed}) == 1  # one program
    assert rules(JIT + 0x10000, JIT + 0x10010) is None  # no record there


def test_a_rule_dropped_by_the_writer_is_dropped_in_the_file():
    """push rbp ... pop rbp, with DW_CFA_restore rbp after the pop: our rows drop rbp's
    rule there too (not "same value": the CIE's state, as the writer said)."""
    rows = (b"\x41\x0e\x10" + bytes([0x86, 2])   # +1: cfa rsp+16, rbp at cfa-16
            + b"\x42\x0e\x08" + bytes([0xC6]))   # +3: cfa rsp+8, rbp restored
    eh_frame = _writer_eh_frame(JIT, len(CODE), -8, rows)
    load, data = _symbol_file(eh_frame)
    ((_start, _end, entry),) = fde_entries(eh_frame, load.eh_frame_address)
    writer = _comparable(entry)
    assert 6 not in writer[-1][2] and 6 in writer[1][2]
    assert _file_rows(data) == {JIT: (len(CODE), writer)}


@pytest.mark.parametrize("seed", range(20))
def test_a_scrambled_table_gives_a_file_all_the_same(seed):
    """A jitdump from a corrupted core: random bytes where the .eh_frame was.  The file
    is written; its rules, if any, hold only inside the function."""
    import random
    rng = random.Random(seed)
    eh_frame = _writer_eh_frame(JIT, len(CODE), -8, _rows(8))
    scrambled = bytes(b ^ (rng.getrandbits(8) if rng.random() < 0.3 else 0) for b in eh_frame)
    _load, data = _symbol_file(scrambled)
    for start, (size, _table) in _file_rows(data).items():
        assert JIT <= start and start + size <= JIT + len(CODE)
