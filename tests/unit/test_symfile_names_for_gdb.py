"""The symbol file's names for GDB (symfile/names_for_gdb.py), read back with pyelftools
and c++filt: each minimal symbol is C++'s mangling of the plain name, which the
demangler gives back byte for byte; C units name the same functions at the same
addresses; names starting with "_" stay as they are, in the symbol table only."""

import subprocess

from elftools.elf.elffile import ELFFile

from jit_unwind.model import Region
from jit_unwind.symfile.build import select, symbol_file_bytes
from jit_unwind.symfile.names_for_gdb import UNIT_FUNCTIONS
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.target import BytesMemory

JIT = 0x7F00_0000_0000
NAMES = ["py::middle:/app/perf_trap.py", "py::__init__:/app/x.py", "_ZN3foo3barEv",
         "js:~fn /app/über.js:1:2", "[jit shim] hot (/app/x.py:12)", "fooTB", "g__2"]


def _file(tmp_path, names, names_for_gdb=True):
    regions = [Region(JIT + 32 * i, JIT + 32 * i + 16, "perf-map", name, sequence=i)
               for i, name in enumerate(names)]
    region_map = RegionMap([Mapping(JIT, JIT + 0x100000, "r-xp", "")], regions)
    data = symbol_file_bytes(BytesMemory({JIT: bytes(0x100000)}), region_map, [],
                             selection=select(region_map), with_unwind_rules=False,
                             names_for_gdb=names_for_gdb)
    path = tmp_path / "jit.elf"
    path.write_bytes(data)
    return ELFFile(open(path, "rb"))


def _symbols(elf):
    return {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()
            if s.name}


def _functions(elf):
    """(name, low pc, size, the unit's language) of every DWARF function."""
    found = []
    for unit in elf.get_dwarf_info().iter_CUs():
        top = unit.get_top_DIE()
        for die in top.iter_children():
            found.append((die.attributes["DW_AT_name"].value.decode(),
                          die.attributes["DW_AT_low_pc"].value,
                          die.attributes["DW_AT_high_pc"].value,
                          top.attributes["DW_AT_language"].value))
    return found


def test_each_symbol_is_a_plain_cxx_name_and_a_c_function(tmp_path):
    elf = _file(tmp_path, NAMES)
    symbols = _symbols(elf)
    for index, name in enumerate(NAMES):
        linkage = name if name.startswith("_") else f"_Z{len(name.encode())}{name}"
        assert symbols[linkage] == JIT + 32 * index
    assert _functions(elf) == [(name, JIT + 32 * i, 16, 0x0002)  # DW_LANG_C
                               for i, name in enumerate(NAMES) if not name.startswith("_")]


def test_the_demangler_gives_each_name_back(tmp_path):
    """binutils' c++filt: libiberty's demangler, which GDB's C++ support calls."""
    symbols = list(_symbols(_file(tmp_path, NAMES)))  # in the table's order
    shown = subprocess.run(["c++filt", *symbols], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert shown == ["foo::bar()" if name == "_ZN3foo3barEv" else name for name in NAMES]


def test_units_of_at_most_unit_functions(tmp_path):
    names = [f"py::f{i}:/app/x.py" for i in range(2 * UNIT_FUNCTIONS + 5)]
    elf = _file(tmp_path, names)
    units = list(elf.get_dwarf_info().iter_CUs())
    assert [len(list(u.get_top_DIE().iter_children())) for u in units] == \
        [UNIT_FUNCTIONS, UNIT_FUNCTIONS, 5]
    for number, unit in enumerate(units):
        top = unit.get_top_DIE().attributes
        first = JIT + 32 * number * UNIT_FUNCTIONS
        assert top["DW_AT_low_pc"].value == first
        last = min(len(names), (number + 1) * UNIT_FUNCTIONS) - 1
        assert first + top["DW_AT_high_pc"].value == JIT + 32 * last + 16
    assert [f[0] for f in _functions(elf)] == names


def test_lldbs_file_keeps_plain_names_and_no_dwarf(tmp_path):
    elf = _file(tmp_path, NAMES, names_for_gdb=False)
    assert set(_symbols(elf)) == set(NAMES)
    assert elf.get_section_by_name(".debug_info") is None
