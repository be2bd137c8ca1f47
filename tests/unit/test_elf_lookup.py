"""elf_lookup.symtab_value: a name's value from a file's .symtab, read with struct,
agrees with pyelftools' parse of every symbol."""

from elftools.elf.elffile import ELFFile

from jit_unwind.elf_lookup import ExportTable, symtab_value
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


def _exported(path):
    """Defined exported symbols by name, as pyelftools parses .dynsym (names defined
    once: an old symbol version may have another value)."""
    values, seen = {}, set()
    with open(path, "rb") as handle:
        for symbol in ELFFile(handle).get_section_by_name(".dynsym").iter_symbols():
            if symbol.name and symbol["st_value"] and symbol["st_shndx"] != "SHN_UNDEF":
                if symbol.name in seen:
                    values.pop(symbol.name, None)
                else:
                    values[symbol.name] = symbol["st_value"]
                seen.add(symbol.name)
    return values


def test_export_table_agrees_with_pyelftools():
    """Looked up through .gnu.hash with struct: each exported name of libc (versioned
    names, hash chains) has pyelftools' value; names it lacks have none."""
    path = "/lib/x86_64-linux-gnu/libc.so.6"
    table = ExportTable(path)
    try:
        exported = _exported(path)
        assert {"malloc", "printf"} <= set(exported)
        for name, value in exported.items():
            assert table.value(name) == value, name
        for name in ("no_such_symbol_here", "mallocx", "__jit_debug_descriptor"):
            assert table.value(name) is None, name
    finally:
        table.close()
