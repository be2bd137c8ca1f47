"""elf_lookup: a name's value from a file's .symtab and from its exported symbols' hash
table, read with struct, agrees with pyelftools' parse of every symbol."""

import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.elf.lookup import _elf, symtab_value
from tests.support import fixture_binary


def _defined(path):
    with open(path, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        values = {}
        for symbol in table.iter_symbols():
            if symbol.name and symbol["st_value"] and symbol["st_shndx"] != "SHN_UNDEF":
                values.setdefault(symbol.name, symbol["st_value"])
        return values


def test_symtab_values_agree_with_pyelftools(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # one entry per name on disk
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


def test_a_symtab_value_is_kept_on_disk_for_the_next_session(tmp_path, monkeypatch):
    """The scan of a file's whole .symtab for one name (HotSpot's call stub variable in
    libjvm's 58,000 symbols) is done once: the next session reads the answer, a name
    there or not, from $XDG_CACHE_HOME/jit-unwind/elf-facts; JIT_UNWIND_ELF_CACHE=0
    writes nothing."""
    from jit_unwind.elf import lookup as elf_lookup
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JIT_UNWIND_ELF_CACHE", raising=False)
    path = str(fixture_binary("nocfi"))
    scanned = []
    scan = elf_lookup._scan_symtab

    def counted(path, name):
        scanned.append(name)
        return scan(path, name)

    monkeypatch.setattr(elf_lookup, "_scan_symtab", counted)

    def session(name):
        elf_lookup._symtab_values.clear()  # a new session: nothing in memory
        return symtab_value(path, name)

    main = _defined(path)["main"]
    assert session("main") == main and session("no_such_symbol_here") is None
    assert scanned == ["main", "no_such_symbol_here"]
    assert session("main") == main and session("no_such_symbol_here") is None
    assert len(scanned) == 2
    assert len(list((tmp_path / "cache" / "jit-unwind" / "elf-facts").glob("*.fact"))) == 2
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "off"))
    monkeypatch.setenv("JIT_UNWIND_ELF_CACHE", "0")
    assert session("main") == main and len(scanned) == 3
    assert not (tmp_path / "off").exists()
    elf_lookup._symtab_values.clear()


def _exported(path):
    """pyelftools' defined dynamic symbols of ``path``: name -> value (the first of a
    name, as the hash chain finds it)."""
    with open(path, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".dynsym")
        values = {}
        for symbol in table.iter_symbols():
            if symbol.name and symbol["st_value"] and symbol["st_shndx"] != "SHN_UNDEF":
                values.setdefault(symbol.name, symbol["st_value"])
        return values


def _assert_exports_agree(path, names):
    exports, loads = _elf(str(path))
    assert exports is not None and loads
    values = _exported(path)
    assert set(names) <= set(values)
    for name, value in values.items():
        assert exports.value(name) == value, name
    for missing in ("no_such_symbol_here", "_PyRuntime", "frameless"):
        assert exports.value(missing) is None


def test_exported_values_agree_with_pyelftools():
    """Exports reads libc's .gnu.hash with struct: every name pyelftools lists as a
    defined dynamic symbol is found at the same value; names not exported are not."""
    libc = next(p for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"),
                            Path("/usr/lib/x86_64-linux-gnu/libc.so.6")) if p.exists())
    _assert_exports_agree(libc, ["malloc", "kill", "printf"])


@pytest.mark.parametrize("style", ["sysv", "gnu"])
def test_exported_values_of_each_hash_style(tmp_path, style):
    """A library linked with only a SysV .hash, or only a .gnu.hash."""
    source = tmp_path / "lib.c"
    source.write_text("int exported_value = 7;\n"
                      "int exported_function(int x) { return x + exported_value; }\n"
                      "static int hidden(void) { return 1; }\n"
                      "int (*keep)(void) = hidden;\n")
    library = tmp_path / "lib.so"
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,--hash-style={style}", "-o",
                    str(library), str(source)], check=True)
    exports, _loads = _elf(str(library))
    assert (exports._gnu is not None) == (style == "gnu")
    _assert_exports_agree(library, ["exported_value", "exported_function"])
    assert exports.value("hidden") is None


def test_a_stripped_files_name_is_found_in_its_debug_file(tmp_path, monkeypatch):
    """GDB's JIT interface finds ``__jit_debug_descriptor`` among minimal symbols, which
    include a stripped file's separate debug file's .symtab (here through its
    .gnu_debuglink): the plugin looks there too, and not in the debugger's debug info."""
    from jit_unwind.elf.lookup import symbol_address
    from jit_unwind.model import Mapping
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = tmp_path / "prog.c"
    source.write_text("struct { int version; } __jit_debug_descriptor = { 1 };\n"
                      "int main(void) { return __jit_debug_descriptor.version; }\n")
    program, debug = tmp_path / "prog", tmp_path / "prog.debug"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(program), str(source)], check=True)
    value = _defined(program)["__jit_debug_descriptor"]
    subprocess.run(["objcopy", "--only-keep-debug", str(program), str(debug)], check=True)
    subprocess.run(["strip", "--strip-all", str(program)], check=True)
    bias = 0x555555554000
    mappings = [Mapping(bias, bias + 0x1000, "r--p", str(program), 0)]
    assert symbol_address(mappings, "__jit_debug_descriptor", full_tables=True) is None
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug}", str(program)],
                   cwd=tmp_path, check=True)
    assert symbol_address(mappings, "__jit_debug_descriptor") is None  # not exported
    assert symbol_address(mappings, "__jit_debug_descriptor",
                          full_tables=True) == bias + value
    # The debug files the debugger read, when it lists them (by a path through a
    # symlink here), instead of those found beside the file.
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    read = {str(link / "prog"): str(debug)}
    assert symbol_address(mappings, "__jit_debug_descriptor", full_tables=True,
                          debug_files=read) == bias + value
    assert symbol_address(mappings, "__jit_debug_descriptor", full_tables=True,
                          debug_files={}) is None


def test_the_files_summaries_are_kept_for_the_next_session(tmp_path, monkeypatch):
    """At every first bt each mapped file is asked for the JIT-interface descriptor: the
    next session answers from one entry filed under the program (each file's headers
    and the names its exports answered), reading no file's headers again; a file
    rebuilt since is read again; a file that is not ELF answers nothing."""
    from jit_unwind.elf import lookup as elf_lookup
    from jit_unwind.model import Mapping
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JIT_UNWIND_ELF_CACHE", raising=False)
    source = tmp_path / "lib.c"
    source.write_text("int exported_value = 7;\n")
    library, program = tmp_path / "lib.so", tmp_path / "prog"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-o", str(program), str(tmp_path / "main.c")], check=True)
    text = tmp_path / "locale"
    text.write_bytes(b"not an ELF file" * 10)
    base, bias = 0x555555554000, 0x7F0000000000
    mappings = [Mapping(base, base + 0x1000, "r--p", str(program), 0),
                Mapping(bias - 0x10000, bias - 0xF000, "r--p", str(text), 0),
                Mapping(bias, bias + 0x1000, "r--p", str(library), 0)]
    value = _exported(library)["exported_value"]
    read = []
    summarize = elf_lookup._summarize

    def counted(path):
        read.append(path)
        return summarize(path)

    monkeypatch.setattr(elf_lookup, "_summarize", counted)

    def session(name):
        elf_lookup._programs.clear()  # a new session: nothing in memory
        elf_lookup._files.clear()
        elf_lookup._last[:] = [None] * 4
        return elf_lookup.symbol_address(mappings, name)

    assert session("exported_value") == bias + value
    assert sorted(read) == sorted([str(program), str(library), str(text)])
    read.clear()
    # The file that is not ELF was kept along with the names' answers.
    assert session("exported_value") == bias + value and read == []
    assert session("no_such_symbol_here") is None  # one look-up through the hash tables
    assert session("no_such_symbol_here") is None and read == []
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,--build-id=sha1", "-o", str(library),
                    str(source)], check=True)  # rebuilt: read again
    read.clear()
    assert session("exported_value") == bias + _exported(library)["exported_value"]
    assert read == [str(library)]
    elf_lookup._programs.clear()
    elf_lookup._files.clear()


def test_files_are_summarized_only_as_far_as_a_look_up_goes(tmp_path, monkeypatch):
    """With nothing kept (a first session, or the cache off), a name the program's own
    file exports is answered from that file's headers alone: the files mapped after it
    are not opened."""
    from jit_unwind.elf import lookup as elf_lookup
    from jit_unwind.model import Mapping
    monkeypatch.setenv("JIT_UNWIND_ELF_CACHE", "0")
    program = fixture_binary("nocfi")
    libc = next(p for p in (Path("/lib/x86_64-linux-gnu/libc.so.6"),
                            Path("/usr/lib/x86_64-linux-gnu/libc.so.6")) if p.exists())
    (tmp_path / "lib.c").write_text("int exported_value = 7;\n")
    library = tmp_path / "lib.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "lib.c")],
                   check=True)
    base, bias = 0x7F0000000000, 0x7F1000000000
    mappings = [Mapping(base, base + 0x1000, "r--p", str(library), 0),
                Mapping(bias, bias + 0x1000, "r--p", str(libc), 0),
                Mapping(0x555555554000, 0x555555555000, "r--p", str(program), 0)]
    read = []
    summarize = elf_lookup._summarize
    monkeypatch.setattr(elf_lookup, "_summarize",
                        lambda path: read.append(path) or summarize(path))
    elf_lookup._programs.clear()
    value = _exported(library)["exported_value"]
    assert elf_lookup.symbol_address(mappings, "exported_value") == base + value
    assert read == [str(library)]
    assert elf_lookup.symbol_address(mappings, "malloc") == bias + _exported(libc)["malloc"]
    assert read == [str(library), str(libc)]
    elf_lookup._programs.clear()
    elf_lookup._files.clear()


def test_a_stops_look_ups_check_each_mapped_file_once(tmp_path, monkeypatch):
    """A first bt looks the same mapped files up three times (the JIT interface's
    descriptor, .PyRuntime, _PyRuntime): through one mapping list, each file's identity
    is checked once (its summary's identity); another list (another stop's mappings)
    checks them again."""
    from jit_unwind.elf import lookup as elf_lookup
    from jit_unwind.model import Mapping
    monkeypatch.setenv("JIT_UNWIND_ELF_CACHE", "0")
    (tmp_path / "lib.c").write_text("int exported_value = 7;\n")
    library = tmp_path / "lib.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "lib.c")],
                   check=True)
    program = fixture_binary("nocfi")
    bias = 0x7F0000000000
    mappings = [Mapping(0x555555554000, 0x555555555000, "r--p", str(program), 0),
                Mapping(bias, bias + 0x1000, "r--p", str(library), 0)]
    checked = []
    summary_of = elf_lookup._Summaries.of
    monkeypatch.setattr(elf_lookup._Summaries, "of",
                        lambda group, path: checked.append(path) or summary_of(group, path))
    value = bias + _exported(library)["exported_value"]
    assert elf_lookup.symbol_address(mappings, "exported_value") == value
    assert elf_lookup.section_address(mappings, ".PyRuntime") is None
    assert elf_lookup.symbol_address(mappings, "_PyRuntime") is None
    assert sorted(checked) == sorted([str(program), str(library)])
    checked.clear()
    assert elf_lookup.symbol_address(list(mappings), "exported_value") == value
    assert str(library) in checked
