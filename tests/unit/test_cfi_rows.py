"""The plugin's one ``.eh_frame`` reader (``unwind/cfi_rows.py``, struct) against
pyelftools' as an independent decoder: the same row at the pcs of every FDE of libc,
ld.so and the CPython 3.14 test interpreter, except where pyelftools cannot decode the
FDE at all (``DW_CFA_GNU_args_size``, which GDB unwinds through): there the struct
reader still gives the CFA and the return address."""

import io
from pathlib import Path

import pytest
from elftools.dwarf.callframe import CallFrameInfo
from elftools.dwarf.structs import DWARFStructs

from jit_unwind.unwind.cfi import RETURN_ADDRESS
from jit_unwind.unwind.cfi_rows import EhFrame
from tests.jit_python import fixture_python

LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")
LOADER = Path("/lib64/ld-linux-x86-64.so.2")
AARCH64_LIBC = Path("/usr/aarch64-linux-gnu/lib/libc.so.6")  # libc6-arm64-cross


def _rules(row):
    """A row as comparable values: the CFA rule and each register's rule."""
    if row is None:
        return None
    found = {}
    for key, rule in row.items():
        if key == "pc":
            continue
        if key == "cfa":
            expr = getattr(rule, "expr", None)
            found[key] = (rule.reg, rule.offset) if expr is None else ("expr", bytes(expr))
        else:
            arg = rule.arg
            found[key] = (rule.type, bytes(arg) if isinstance(arg, (list, bytes)) else arg)
    return found


def _pcs(starts, index):
    start = starts[index]
    end = starts[index + 1] if index + 1 < len(starts) else start + 16
    return sorted({start, start + 1, start + 4, (start + end) // 2, max(start, end - 1)})


class Pyelftools:
    """pyelftools' decoding of the FDE at a given offset of ``table``'s bytes."""

    def __init__(self, table: EhFrame):
        structs = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8)
        self.info = CallFrameInfo(io.BytesIO(table.data), len(table.data), table.address,
                                  structs, for_eh_frame=True)

    def row_at(self, offset: int, pc: int):
        """The row at ``pc`` and why pyelftools may have none: the FDE holds
        DW_CFA_GNU_args_size (0.33 fails on the whole FDE) or nothing but nops (no row
        of its own: the CIE's rules hold, as GDB takes them)."""
        entry = self.info._parse_entry_at(offset)
        start = entry.header["initial_location"]
        if not start <= pc < start + entry.header["address_range"]:
            return None, "outside"  # a pc past a short FDE: another FDE's, or none
        opcodes = {instruction.opcode for instruction in entry.instructions}
        why = "args_size" if 0x2E in opcodes else "empty" if opcodes <= {0} else None
        try:
            table = entry.get_decoded().table
        except Exception:  # the whole FDE, for one instruction it does not decode
            return None, why
        rows = [row for row in table if row["pc"] <= pc]
        return (rows[-1] if rows else None), why


@pytest.mark.parametrize("path", [LIBC, LOADER, "3.14", AARCH64_LIBC],
                         ids=["libc", "ld.so", "python3.14", "aarch64-libc"])
def test_rows_equal_pyelftools(path):
    path = str(fixture_python(path) if path == "3.14" else path)
    ours = EhFrame.of_file(path)
    theirs = Pyelftools(ours)
    compared = only_ours = 0
    starts = [start for start, _offset in ours.index]
    for index in range(len(starts)):
        for pc in _pcs(starts, index):
            expected, why = theirs.row_at(ours.index[index][1], pc)
            if why == "outside":
                continue
            mine, expected = _rules(ours.row_at(pc)), _rules(expected)
            if expected is None and mine is not None and why == "args_size":
                # pyelftools fails on the whole FDE; GDB, and we, unwind through it
                assert mine["cfa"][0] is not None and RETURN_ADDRESS in mine, (hex(pc), mine)
                only_ours += 1
                continue
            if expected is None and why == "empty":
                # aarch64's leaf functions: CFA = sp, the return address still in x30
                cie = ours._fde(ours.index[index][1])[0]
                assert mine == _rules(cie.initial) and mine["cfa"] == (31, 0), (hex(pc), mine)
                only_ours += 1
                continue
            assert mine == expected, f"{path} at {pc:#x}"
            compared += 1
    assert compared > 1000 and only_ours < compared // 100, (compared, only_ours)
