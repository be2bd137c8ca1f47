"""elf_lookup.symtab_value: a name's value from a file's .symtab, read with struct,
agrees with pyelftools' parse of every symbol."""

from elftools.elf.elffile import ELFFile

from jit_unwind.elf_lookup import symtab_value
from tests.support import fixture_binary


def _defined(path):
    with open(path, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        values = {}
        for symbol in table.iter_symbols():
            if symbol.name and symbol["st_value"] and symbol["st_shndx"] != "SHN_UNDEF":
                values.setdefault(symbol.name, symbol["st_value"])
        return values


def test_symtab_values_agree_with_pyelftools():
    path = str(fixture_binary("nocfi"))
    values = _defined(path)
    assert {"main", "asm_fp_function", "c_frameless_function"} <= set(values)
    for name, value in values.items():
        assert symtab_value(path, name) == value, name
    assert symtab_value(path, "no_such_symbol_here") is None
    # A name stored as the tail of a longer one ("frameless_function" inside
    # "asm_frameless_function") names no symbol of its own.
    assert symtab_value(path, "frameless_function") is None
    assert symtab_value("/nonexistent/file", "main") is None
