"""A quick pass over DWARF entries: each entry's tag and the few attributes a pc's
functions need (ranges, sibling, call site), every other attribute skipped by its form.

pyelftools decodes every attribute of every entry it passes (65 µs each); finding the
function holding a pc in CPython's ceval.c passes thousands.  Anything unusual here
(64-bit DWARF, a form not listed) raises UnsupportedDwarf: the caller asks pyelftools."""

from functools import lru_cache
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..elf.leb128 import read_sleb, read_uleb

KEPT = {"DW_AT_low_pc", "DW_AT_high_pc", "DW_AT_ranges", "DW_AT_sibling",
        "DW_AT_call_file", "DW_AT_call_line", "DW_AT_name", "DW_AT_linkage_name",
        "DW_AT_MIPS_linkage_name", "DW_AT_abstract_origin", "DW_AT_specification",
        "DW_AT_comp_dir", "DW_AT_stmt_list", "DW_AT_str_offsets_base", "DW_AT_addr_base",
        "DW_AT_rnglists_base"}
STRX = {"DW_FORM_strx", "DW_FORM_strx1", "DW_FORM_strx2", "DW_FORM_strx3", "DW_FORM_strx4"}
ADDRX = {"DW_FORM_addrx", "DW_FORM_addrx1", "DW_FORM_addrx2", "DW_FORM_addrx3",
         "DW_FORM_addrx4"}
FIXED = {"DW_FORM_addr": 8, "DW_FORM_data1": 1, "DW_FORM_ref1": 1, "DW_FORM_flag": 1,
         "DW_FORM_strx1": 1, "DW_FORM_addrx1": 1, "DW_FORM_data2": 2, "DW_FORM_ref2": 2,
         "DW_FORM_strx2": 2, "DW_FORM_addrx2": 2, "DW_FORM_strx3": 3, "DW_FORM_addrx3": 3,
         "DW_FORM_data4": 4, "DW_FORM_ref4": 4, "DW_FORM_strp": 4, "DW_FORM_line_strp": 4,
         "DW_FORM_sec_offset": 4, "DW_FORM_ref_addr": 4, "DW_FORM_strx4": 4,
         "DW_FORM_addrx4": 4, "DW_FORM_strp_sup": 4, "DW_FORM_ref_sup4": 4,
         "DW_FORM_data8": 8, "DW_FORM_ref8": 8, "DW_FORM_ref_sig8": 8,
         "DW_FORM_ref_sup8": 8, "DW_FORM_data16": 16, "DW_FORM_flag_present": 0,
         "DW_FORM_implicit_const": 0}
LEB = {"DW_FORM_udata", "DW_FORM_ref_udata", "DW_FORM_strx", "DW_FORM_addrx",
       "DW_FORM_rnglistx", "DW_FORM_loclistx"}
BLOCKS = {"DW_FORM_block1": 1, "DW_FORM_block2": 2, "DW_FORM_block4": 4}
REFERENCES = {"DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4", "DW_FORM_ref8",
              "DW_FORM_ref_udata"}  # relative to the unit
MAX_ENTRIES = 2_000_000  # entries passed in one unit: a bound against garbage


class UnsupportedDwarf(Exception):
    """Something this pass does not decode: let pyelftools do it."""


def string_end(data, at: int) -> int:
    """Where the NUL ending the string at ``at`` is (``data`` may be a mapping, which
    has ``find`` but no ``index``)."""
    end = data.find(b"\0", at)
    if end < 0:
        raise UnsupportedDwarf("a string without its end")
    return end


class Entry(NamedTuple):
    offset: int  # in .debug_info
    tag: str
    children: Optional[int]  # where its children start, None without children
    end: int  # where its next sibling starts (its subtree skipped)
    attributes: Dict[str, Tuple[str, int]]  # the KEPT ones: form, value


# DWARF's numbers by name: every form (an unknown one is passed on as its number, and
# UnsupportedDwarf when met), the attributes in KEPT and the tags the reader looks for;
# other attributes and tags are only skipped or compared, so their numbers do.
FORMS = {
    0x01: "DW_FORM_addr", 0x03: "DW_FORM_block2", 0x04: "DW_FORM_block4",
    0x05: "DW_FORM_data2", 0x06: "DW_FORM_data4", 0x07: "DW_FORM_data8",
    0x08: "DW_FORM_string", 0x09: "DW_FORM_block", 0x0A: "DW_FORM_block1",
    0x0B: "DW_FORM_data1", 0x0C: "DW_FORM_flag", 0x0D: "DW_FORM_sdata",
    0x0E: "DW_FORM_strp", 0x0F: "DW_FORM_udata", 0x10: "DW_FORM_ref_addr",
    0x11: "DW_FORM_ref1", 0x12: "DW_FORM_ref2", 0x13: "DW_FORM_ref4", 0x14: "DW_FORM_ref8",
    0x15: "DW_FORM_ref_udata", 0x16: "DW_FORM_indirect", 0x17: "DW_FORM_sec_offset",
    0x18: "DW_FORM_exprloc", 0x19: "DW_FORM_flag_present", 0x1A: "DW_FORM_strx",
    0x1B: "DW_FORM_addrx", 0x1C: "DW_FORM_ref_sup4", 0x1D: "DW_FORM_strp_sup",
    0x1E: "DW_FORM_data16", 0x1F: "DW_FORM_line_strp", 0x20: "DW_FORM_ref_sig8",
    0x21: "DW_FORM_implicit_const", 0x22: "DW_FORM_loclistx", 0x23: "DW_FORM_rnglistx",
    0x24: "DW_FORM_ref_sup8", 0x25: "DW_FORM_strx1", 0x26: "DW_FORM_strx2",
    0x27: "DW_FORM_strx3", 0x28: "DW_FORM_strx4", 0x29: "DW_FORM_addrx1",
    0x2A: "DW_FORM_addrx2", 0x2B: "DW_FORM_addrx3", 0x2C: "DW_FORM_addrx4"}
ATTRIBUTES = {
    0x01: "DW_AT_sibling", 0x03: "DW_AT_name", 0x10: "DW_AT_stmt_list",
    0x11: "DW_AT_low_pc", 0x12: "DW_AT_high_pc", 0x1B: "DW_AT_comp_dir",
    0x31: "DW_AT_abstract_origin", 0x47: "DW_AT_specification", 0x55: "DW_AT_ranges",
    0x58: "DW_AT_call_file", 0x59: "DW_AT_call_line", 0x6E: "DW_AT_linkage_name",
    0x72: "DW_AT_str_offsets_base", 0x73: "DW_AT_addr_base", 0x74: "DW_AT_rnglists_base",
    0x2007: "DW_AT_MIPS_linkage_name"}
TAGS = {0x0B: "DW_TAG_lexical_block", 0x11: "DW_TAG_compile_unit",
        0x1D: "DW_TAG_inlined_subroutine", 0x2E: "DW_TAG_subprogram"}


# How an entry's attributes are passed: one step per attribute, fixed-size ones no one
# keeps merged into one skip (the pass over a unit's entries is most of a pc's cost).
SKIP, FIXED_KEPT, ULEB, ULEB_KEPT, SLEB, STRING, STRING_KEPT, BLOCK, BLOCK_FIXED, \
    CONSTANT, UNDECODED = range(11)


def _steps(specs: List[Tuple[str, str, int]]) -> tuple:
    steps: List[tuple] = []
    for name, form, constant in specs:
        keep = name in KEPT
        size = FIXED.get(form)
        if form == "DW_FORM_implicit_const":
            if keep:
                steps.append((CONSTANT, name, form, constant))
        elif size is not None:
            if keep:
                steps.append((FIXED_KEPT, name, form, size))
            elif steps and steps[-1][0] == SKIP:
                steps[-1] = (SKIP, None, None, steps[-1][3] + size)
            elif size:
                steps.append((SKIP, None, None, size))
        elif form in LEB:
            steps.append((ULEB_KEPT, name, form, 0) if keep else (ULEB, None, form, 0))
        elif form == "DW_FORM_sdata":
            steps.append((SLEB, None, form, 0))
        elif form == "DW_FORM_string":
            steps.append((STRING_KEPT, name, form, 0) if keep else (STRING, None, form, 0))
        elif form in ("DW_FORM_exprloc", "DW_FORM_block"):
            steps.append((BLOCK, None, form, 0))
        elif form in BLOCKS:
            steps.append((BLOCK_FIXED, None, form, BLOCKS[form]))
        else:  # DW_FORM_indirect and forms not listed
            steps.append((UNDECODED, None, form, 0))
    return tuple(steps)


def _skips(steps: tuple) -> Tuple[Optional[int], Optional[Tuple[int, int]]]:
    """How an entry passed over (its tag not wanted) is skipped without its steps: the
    size of its attributes when all are of fixed size, and where its DW_AT_sibling is
    (offset from its attributes' start, size) when only fixed-size ones precede it."""
    at: Optional[int] = 0
    sibling = None
    for step, name, form, size in steps:
        if step == FIXED_KEPT and name == "DW_AT_sibling" and form in REFERENCES \
                and at is not None:
            sibling = (at, size)
        if step in (SKIP, FIXED_KEPT):
            at = at + size if at is not None else None
        elif step != CONSTANT:
            at = None
    return at, sibling


class Abbrevs:
    """The abbreviation table at ``at`` of .debug_abbrev: code -> (tag, has children,
    the steps that pass its attributes, ``_skips``, whether it has an address range)
    with DWARF's names, read only as
    far as the codes asked for (a unit whose entries are barely read needs a few of
    its hundreds)."""

    AHEAD = 1 << 16  # bytes made ready at a time when ``more`` is given

    def __init__(self, data: bytes, at: int, more=None):
        """``more(end)``: makes ``data``'s first ``end`` bytes ready (a section being
        inflated); None when they all are."""
        self._data = data
        self._at: Optional[int] = at  # where reading stopped, None at the table's end
        self._table: Dict[int, tuple] = {}
        self._more = more
        self._ready = 0

    def get(self, code: int) -> Optional[tuple]:
        found = self._table.get(code)
        while found is None and self._at is not None:
            self._read_one()
            found = self._table.get(code)
        return found

    def _read_one(self) -> None:
        data, at = self._data, self._at
        if at is None:  # the table's end (get() asks only before it)
            return
        if self._more is not None and at + 4096 > self._ready:
            self._ready = at + self.AHEAD
            self._more(self._ready)
        if at >= len(data):
            self._at = None
            return
        code, at = read_uleb(data, at)
        if code == 0:
            self._at = None
            return
        tag, at = read_uleb(data, at)
        children = data[at] != 0
        at += 1
        raw: List[int] = []  # name, form (and an implicit constant) of each attribute
        while True:
            name = data[at]
            if name < 0x80:
                at += 1
            else:
                name, at = read_uleb(data, at)
            form = data[at]
            if form < 0x80:
                at += 1
            else:
                form, at = read_uleb(data, at)
            if name == 0 and form == 0:
                break
            raw += (name, form)
            if form == FORM_IMPLICIT_CONST:
                constant, at = read_sleb(data, at)
                raw.append(constant)
        passing = _passing_of(tuple(raw))
        self._table.setdefault(code, (TAGS.get(tag, str(tag)), children, *passing))
        self._at = at


FORM_IMPLICIT_CONST = 0x21
RANGE_ATTRIBUTES = ("DW_AT_low_pc", "DW_AT_high_pc", "DW_AT_ranges")
# An attribute list's steps and _skips, kept by its numbers: units repeat the same lists.
@lru_cache(maxsize=4096)
def _passing_of(raw: tuple) -> tuple:
    specs = []
    at = 0
    while at < len(raw):
        name, form = raw[at], raw[at + 1]
        at += 2
        constant = 0
        if form == FORM_IMPLICIT_CONST:
            constant = raw[at]
            at += 1
        specs.append((ATTRIBUTES.get(name, str(name)), FORMS.get(form, str(form)), constant))
    steps = _steps(specs)
    ranged = any(name in RANGE_ATTRIBUTES for name, _form, _constant in specs)
    return (steps, *_skips(steps), ranged)


def read_abbrevs(data: bytes, at: int, more=None) -> Abbrevs:
    return Abbrevs(data, at, more)


class Skimmer:
    """One unit's entries, read from ``data`` (the whole .debug_info) with its
    abbreviations from ``abbrevs`` (the whole .debug_abbrev)."""

    def __init__(self, cu, data: bytes, abbrevs: bytes, section, more_abbrevs=None):
        if cu.structs.dwarf_format != 32 or cu.structs.address_size != 8:
            raise UnsupportedDwarf("64-bit DWARF or 32-bit addresses")
        self.cu = cu
        self.data = data
        self.base = cu.cu_offset
        self.end = cu.cu_offset + cu["unit_length"] + 4
        self._abbrevs = read_abbrevs(abbrevs, cu["debug_abbrev_offset"], more_abbrevs)
        self._read = self._abbrevs._table  # code -> abbreviation, those read so far
        self._section = section  # "str", "addr"...: .debug_<name>'s bytes, None without
        self._bases: Dict[str, int] = {}  # the unit's DWARF 5 table bases
        self.passed = 0

    def set_bases(self, kept: Dict[str, Tuple[str, int]]) -> None:
        """The unit's own entry's table bases (indexed strings, addresses, ranges)."""
        self._bases = {name: value for name, (_form, value) in kept.items()
                       if name.endswith("_base")}

    def _indexed(self, table: str, base: str, index: int, size: int) -> int:
        data = self._section(table)
        at = self._bases.get(base)
        if data is None or at is None or at + (index + 1) * size > len(data):
            raise UnsupportedDwarf(f"{table} entry {index}")
        at += index * size
        return int.from_bytes(data[at:at + size], "little")

    def address(self, kept: Tuple[str, int]) -> int:
        """A kept address attribute's value (DW_FORM_addrx through .debug_addr)."""
        form, value = kept
        if form == "DW_FORM_addr":
            return value
        if form in ADDRX:
            return self._indexed("addr", "DW_AT_addr_base", value, 8)
        raise UnsupportedDwarf(form)

    def range_list(self, kept: Tuple[str, int]) -> int:
        """A kept DW_AT_ranges' offset in its section (DW_FORM_rnglistx through the
        unit's offsets table)."""
        form, value = kept
        if form == "DW_FORM_rnglistx":
            return self._bases["DW_AT_rnglists_base"] + self._indexed(
                "rnglists", "DW_AT_rnglists_base", value, 4)
        if form in ("DW_FORM_sec_offset", "DW_FORM_data4", "DW_FORM_data8"):
            return value
        raise UnsupportedDwarf(form)

    def _abbrev(self, code: int) -> tuple:
        found = self._read.get(code) or self._abbrevs.get(code)
        if found is None:
            raise UnsupportedDwarf(f"no abbreviation {code}")
        return found

    def text(self, kept: Tuple[str, int]) -> str:
        """A kept string attribute's text."""
        form, value = kept
        if form == "DW_FORM_string":
            data = self.data
        elif form == "DW_FORM_strp":
            data = self._section("str")
        elif form == "DW_FORM_line_strp":
            data = self._section("line_str")
        elif form in STRX:
            value = self._indexed("str_offsets", "DW_AT_str_offsets_base", value, 4)
            data = self._section("str")
        else:
            raise UnsupportedDwarf(form)
        if data is None:
            raise UnsupportedDwarf(f"no section for {form}")
        end = string_end(data, value)
        return bytes(data[value:end]).decode("utf-8", "replace")

    def reference(self, kept: Tuple[str, int]) -> int:
        """The .debug_info offset a kept reference attribute points to, in this unit."""
        form, value = kept
        target = self.base + value if form in REFERENCES else (
            value if form == "DW_FORM_ref_addr" else None)
        if target is None or not self.base <= target < self.end:
            raise UnsupportedDwarf("a reference out of the unit")
        return target

    def entry(self, offset: int, whole_unit: bool = False) -> Optional[Entry]:
        """The entry at ``offset``, None for a null entry (the end of its siblings);
        ``whole_unit``: the unit's own entry, whose children end with the unit."""
        self.passed += 1
        if self.passed > MAX_ENTRIES or not self.base <= offset < self.end:
            raise UnsupportedDwarf("runaway pass")
        data = self.data
        code = data[offset]
        if code < 0x80:
            at = offset + 1
        else:
            code, at = read_uleb(data, offset)
        if code == 0:
            return None
        found = self._read.get(code)  # the abbreviations read so far: no call
        tag, has_children, steps, _size, _sibling, _ranged = \
            found if found is not None else self._abbrev(code)
        kept: Dict[str, Tuple[str, int]] = {}
        for step, name, form, size in steps:
            if step == SKIP:
                at += size
            elif step == FIXED_KEPT:
                kept[name] = (form, int.from_bytes(data[at:at + size], "little"))
                at += size
            elif step == ULEB or step == SLEB:
                while data[at] & 0x80:
                    at += 1
                at += 1
            elif step == ULEB_KEPT:
                value, at = read_uleb(data, at)
                kept[name] = (form, value)
            elif step == STRING or step == STRING_KEPT:
                if step == STRING_KEPT:
                    kept[name] = (form, at)
                at = data.find(b"\0", at) + 1
                if not at:
                    raise UnsupportedDwarf("a string without its end")
            elif step == BLOCK:
                length, at = read_uleb(data, at)
                at += length
            elif step == BLOCK_FIXED:
                at += size + int.from_bytes(data[at:at + size], "little")
            elif step == CONSTANT:
                kept[name] = (form, size)
            else:
                raise UnsupportedDwarf(form)
        if not has_children:
            return Entry(offset, tag, None, at, kept)
        if whole_unit:
            return Entry(offset, tag, at, self.end, kept)
        sibling = kept.get("DW_AT_sibling")
        if sibling is not None and sibling[0] in REFERENCES:
            return Entry(offset, tag, at, self.base + sibling[1], kept)
        return Entry(offset, tag, at, self._past_children(at), kept)

    def _past_children(self, at: int) -> int:
        while True:
            found = self.entry(at)
            if found is None:
                return at + 1  # the null entry's one byte
            at = found.end

    def children_iter(self, entry: Entry, wanted=None, ranged: bool = False):
        """``entry``'s children; with ``wanted`` (tags), only those with one of them,
        the others skipped by their size or sibling where their abbreviation gives
        it, without reading their attributes.  ``ranged``: a wanted child without
        an address range (a function's declaration) is not read either: None
        stands for it."""
        at = entry.children
        data, abbrevs, base, end = self.data, self._abbrevs, self.base, self.end
        read = self._read
        while at is not None and at < end:
            if wanted is not None:
                code = data[at]
                start = at + 1
                if code >= 0x80:
                    code, start = read_uleb(data, at)
                found = (read.get(code) or abbrevs.get(code)) if code else None
                if found is not None:
                    tag, has_children, _steps, size, sibling, has_range = found
                    if tag in wanted and (has_range or not ranged):
                        skipped = None  # read below
                    elif not has_children and size is not None:
                        skipped = start + size
                    elif has_children and sibling is not None:
                        place, width = sibling
                        skipped = base + int.from_bytes(data[start + place:start + place
                                                             + width], "little")
                    else:
                        skipped = None
                    if skipped is not None and skipped > at:
                        self.passed += 1
                        if self.passed > MAX_ENTRIES:
                            raise UnsupportedDwarf("runaway pass")
                        at = skipped
                        if tag in wanted:
                            yield None
                        continue
            child = self.entry(at)
            if child is None:
                return
            if wanted is None or child.tag in wanted:
                yield child
            at = child.end

    def children(self, entry: Entry) -> List[Entry]:
        return list(self.children_iter(entry))
