"""The DWARF entry pass of ``--debugger none`` (``coreread/dies.py``) on a unit built here
byte by byte: entries a pc does not need are passed by their abbreviation's size or
DW_AT_sibling without being read, function declarations too when only functions with
a range are asked for, and what is found is what reading every entry finds."""

import struct

from jit_unwind.coreread.dies import Skimmer
from jit_unwind.coreread.headers import UnitHeader

SUBPROGRAM = ("DW_TAG_subprogram",)
# code: tag, has children, (attribute, form) pairs
ABBREVIATIONS = {
    1: (0x11, 1, [(0x03, 0x08)]),                          # compile_unit: name string
    2: (0x24, 0, [(0x0B, 0x0B), (0x3E, 0x0B)]),            # base_type: fixed size
    3: (0x13, 1, [(0x01, 0x13), (0x0B, 0x0B)]),            # structure_type with sibling
    4: (0x0D, 0, [(0x03, 0x08)]),                          # member: name string
    5: (0x34, 0, [(0x03, 0x08), (0x02, 0x18)]),            # variable: exprloc location
    6: (0x2E, 1, [(0x01, 0x13), (0x03, 0x08), (0x3C, 0x19)]),  # declaration
    7: (0x05, 0, [(0x49, 0x13)]),                          # formal_parameter
    8: (0x2E, 1, [(0x01, 0x13), (0x03, 0x08), (0x11, 0x01), (0x12, 0x06)]),  # function
    9: (0x0B, 0, [(0x11, 0x01), (0x12, 0x06)]),            # lexical_block
    10: (0x13, 1, [(0x0B, 0x0B)]),                         # structure_type, no sibling
}


def abbreviations() -> bytes:
    out = bytearray()
    for code, (tag, children, attributes) in ABBREVIATIONS.items():
        out += bytes([code, tag, children])
        for name, form in attributes:
            out += bytes([name, form])
        out += b"\0\0"
    return bytes(out + b"\0")


class Unit:
    """A DWARF 5 unit's bytes; ``entry`` adds one, returning its offset, and a
    DW_AT_sibling placeholder is patched once its subtree ends (``close``)."""

    def __init__(self):
        self.data = bytearray(b"\0" * 4 + struct.pack("<HBBI", 5, 1, 8, 0))
        self.open = []  # where each open entry's sibling is to be written

    def entry(self, code: int, *fields: bytes, sibling: bool = False) -> int:
        offset = len(self.data)
        self.data.append(code)
        if sibling:
            self.open.append(len(self.data))
            self.data += b"\0\0\0\0"
        for field in fields:
            self.data += field
        return offset

    def close(self, sibling: bool = False) -> None:
        self.data.append(0)  # the null entry ending the children
        if sibling:
            struct.pack_into("<I", self.data, self.open.pop(), len(self.data))

    def done(self) -> bytes:
        struct.pack_into("<I", self.data, 0, len(self.data) - 4)
        return bytes(self.data)


def build():
    unit = Unit()
    unit.entry(1, b"unit.c\0")
    offsets = {"base": unit.entry(2, b"\x04\x05")}
    offsets["struct"] = unit.entry(3, b"\x08", sibling=True)
    unit.entry(4, b"first\0")
    unit.entry(4, b"second\0")
    unit.close(sibling=True)
    offsets["variable"] = unit.entry(5, b"counter\0", b"\x03\x91\x00\x00")
    offsets["declaration"] = unit.entry(6, b"puts\0", sibling=True)
    unit.entry(7, struct.pack("<I", offsets["base"]))
    unit.close(sibling=True)
    offsets["function"] = unit.entry(8, b"main\0", struct.pack("<QI", 0x1000, 0x40),
                                     sibling=True)
    offsets["block"] = unit.entry(9, struct.pack("<QI", 0x1010, 0x10))
    offsets["plain struct"] = unit.entry(10, b"\x10")
    unit.entry(4, b"only\0")
    unit.close()
    unit.close(sibling=True)
    unit.close()  # the unit's own children
    return unit.done(), offsets


def skimmer(info: bytes):
    found = Skimmer(UnitHeader(info, 0), info, abbreviations(), lambda name: None)
    read = []
    entry = found.entry

    def recording(offset, whole_unit=False):
        read.append(offset)
        return entry(offset, whole_unit)
    found.entry = recording
    top = found.entry(UnitHeader(info, 0).cu_die_offset, whole_unit=True)
    read.clear()
    return found, top, read


def test_passing_over_entries_finds_what_reading_them_all_finds():
    info, offsets = build()
    every, top, _ = skimmer(info)
    children = list(every.children_iter(top))
    assert [child.offset for child in children] == [
        offsets[name] for name in ("base", "struct", "variable", "declaration", "function")]
    quick, top, read = skimmer(info)
    found = list(quick.children_iter(top, SUBPROGRAM))
    assert [entry.offset for entry in found] == [offsets["declaration"], offsets["function"]]
    assert found[1].attributes == children[4].attributes
    # the base type by its size, the struct by its sibling: neither read
    assert offsets["base"] not in read and offsets["struct"] not in read
    assert offsets["variable"] in read  # an expression's length is in the entry


def test_declarations_are_not_read_when_only_functions_with_a_range_are_asked_for():
    info, offsets = build()
    quick, top, read = skimmer(info)
    found = list(quick.children_iter(top, SUBPROGRAM, ranged=True))
    assert [entry and entry.offset for entry in found] == [None, offsets["function"]]
    assert offsets["declaration"] not in read


def test_a_functions_scopes_past_a_struct_without_sibling():
    info, offsets = build()
    quick, top, read = skimmer(info)
    function = [entry for entry in quick.children_iter(top, SUBPROGRAM, ranged=True)
                if entry is not None][0]
    scopes = list(quick.children_iter(function, ("DW_TAG_lexical_block",)))
    assert [entry.offset for entry in scopes] == [offsets["block"]]
    assert list(quick.children_iter(function, ("DW_TAG_inlined_subroutine",))) == []
