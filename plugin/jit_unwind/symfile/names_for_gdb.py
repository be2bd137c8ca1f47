"""JIT names that GDB prints as they are written.

GDB guesses a language for every minimal symbol by offering its name to each
language's demangler, Ada's last: Ada's decoder reads a name such as
``py::f:/app/x.py`` as ``py::f:/app/x[py]`` (``.py`` is a compiler suffix to it; ``__``
becomes ``.``, trailing digits go, ...) and GDB then prints that decoding in frame
lines, ``info frame`` and ``info symbol``.  No setting of ours can stop it, and the
user's ``set print demangle`` is theirs.  So the file GDB loads says the language
itself:

- each minimal symbol's name is C++'s mangling of a plain name (``_Z`` LENGTH NAME):
  C++'s demangler claims it before Ada's and gives back NAME, byte for byte, which is
  what ``info symbol`` prints;
- a C compilation unit (DWARF 4) names each function too: full symbols, which GDB
  prefers for frame lines, ``info frame``, ``x/i``, ``disassemble`` and ``break``, and
  whose C name is printed as written (no demangler runs on it).  Units of at most
  UNIT_FUNCTIONS functions: GDB reads the whole unit that holds a pc it looks up.

A name starting with ``_`` is left as it is: Ada's decoder never reads one, and a name
mangled by its JIT (``_ZN...``) is then demangled by GDB as any other code's.
"""

import operator
import struct
import sys
from array import array
from typing import List, Sequence, Tuple

UNIT_FUNCTIONS = 128

DW_TAG_compile_unit, DW_TAG_subprogram = 0x11, 0x2E
DW_AT_name, DW_AT_low_pc, DW_AT_high_pc = 0x03, 0x11, 0x12
DW_AT_language, DW_AT_external = 0x13, 0x3F
DW_FORM_addr, DW_FORM_data2, DW_FORM_data4, DW_FORM_data8 = 0x01, 0x05, 0x06, 0x07
DW_FORM_strp, DW_FORM_flag_present = 0x0E, 0x19
DW_LANG_C = 0x0002
UNIT_CODE, FUNCTION_CODE = 1, 2

# Abbreviation 1: the unit (language, its code's range); 2: a function (name in
# .debug_str, external, its range).  Each is (code, tag, children, attribute pairs).
DEBUG_ABBREV = bytes([
    UNIT_CODE, DW_TAG_compile_unit, 1,
    DW_AT_language, DW_FORM_data2, DW_AT_low_pc, DW_FORM_addr,
    DW_AT_high_pc, DW_FORM_data8, 0, 0,
    FUNCTION_CODE, DW_TAG_subprogram, 0,
    DW_AT_name, DW_FORM_strp, DW_AT_external, DW_FORM_flag_present,
    DW_AT_low_pc, DW_FORM_addr, DW_AT_high_pc, DW_FORM_data4, 0, 0,
    0])
FUNCTION_DIE_SIZE = 17  # code (1), name's offset (4), start (8), size (4)
_UNIT_DIE = struct.Struct("<BHQQ")   # code, language, low pc, size
_HEADER = struct.Struct("<IHIB")     # unit length, version 4, abbreviations at 0, 8-byte addresses


def linkage_names(names: Sequence[str]) -> Tuple[List[str], List[int]]:
    """The symbol table's names for ``names``, and for each the length of the prefix
    before the plain name inside it (0: left as it is)."""
    if "".join(names).isascii():
        lengths: Sequence[int] = list(map(len, names))
    else:
        lengths = [len(name.encode("utf-8", "replace")) for name in names]
    # Comprehensions and C-level maps: a perf map has 10,000s of names.
    linkage = [name if name[:1] == "_" else f"_Z{length}{name}"
               for name, length in zip(names, lengths)]
    prefixes = list(map(operator.sub, map(len, linkage), map(len, names)))
    return linkage, prefixes


def c_units(name_offsets: Sequence[int], prefixes: Sequence[int], starts: Sequence[int],
            sizes: Sequence[int]) -> bytes:
    """.debug_info: C units naming each function whose prefix is not 0, its name at
    ``name_offsets[i] + prefixes[i]`` of .debug_str (the symbol table's strings).
    Functions sorted by start, not overlapping: the units' ranges do not overlap."""
    offsets = list(map(operator.add, name_offsets, prefixes))
    if not all(prefixes):
        kept = [index for index, prefix in enumerate(prefixes) if prefix]
        offsets = [offsets[i] for i in kept]
        starts = [starts[i] for i in kept]
        sizes = [sizes[i] for i in kept]
    dies = _function_dies(offsets, starts, sizes)
    units = []
    for first in range(0, len(starts), UNIT_FUNCTIONS):
        last = min(first + UNIT_FUNCTIONS, len(starts)) - 1
        low = starts[first]
        high = max(low, starts[last] + sizes[last])
        body = (_UNIT_DIE.pack(UNIT_CODE, DW_LANG_C, low, high - low)
                + dies[first * FUNCTION_DIE_SIZE:(last + 1) * FUNCTION_DIE_SIZE] + b"\0")
        units.append(_HEADER.pack(_HEADER.size - 4 + len(body), 4, 0, 8) + body)
    return b"".join(units)


def _function_dies(offsets: Sequence[int], starts: Sequence[int],
                   sizes: Sequence[int]) -> bytes:
    """The functions' DIEs, one after another, their fields interleaved column by
    column by slice assignment (packing 10,000s of DIEs one by one cost ~10 ms)."""
    count = len(starts)
    if sizes and max(sizes) > 0xFFFFFFFF:
        sizes = [min(size, 0xFFFFFFFF) for size in sizes]
    dies = bytearray(FUNCTION_DIE_SIZE * count)
    dies[0::FUNCTION_DIE_SIZE] = bytes([FUNCTION_CODE]) * count
    for position, column in ((1, array("I", offsets)), (5, array("Q", starts)),
                             (13, array("I", sizes))):
        if sys.byteorder != "little":
            column.byteswap()
        data, width = column.tobytes(), column.itemsize
        for byte in range(width):
            dies[position + byte::FUNCTION_DIE_SIZE] = data[byte::width]
    return bytes(dies)
