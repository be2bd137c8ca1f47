"""GDB's JIT interface (``__jit_debug_descriptor``) read from recorded memory.

The registered object file is a real one: a tiny C file compiled with gcc.  The sizes
expected come from binutils' ``nm``, not from the ELF parser the code uses.
"""

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from jit_unwind.model import Region
from jit_unwind.regions.jit_interface import MAX_SYMFILE, read_jit_interface
from jit_unwind.target import BytesMemory

SOURCE = """\
int jit_add(int a, int b) { return a + b; }

int jit_mul(int a, int b)
{
    int result = 0;
    for (int i = 0; i < b; i++)
        result += a;
    return result;
}
"""

DESCRIPTOR = 0x601040
FIRST, SECOND = 0x7F0000001000, 0x7F0000001020
SYMFILE, GARBAGE = 0x7F0000100000, 0x7F0000200000
# An ELF header that starts right and then is nonsense (a half-written image).
GARBAGE_BYTES = b"\x7fELF\x02\x01\x01" + bytes(range(9, 256)) * 4


@pytest.fixture(scope="module")
def object_file(tmp_path_factory) -> Tuple[bytes, List[Tuple[str, int, int]]]:
    """The object file's bytes and its functions: (name, value, size) from nm."""
    for tool in ("gcc", "nm"):
        assert shutil.which(tool), f"{tool} is needed to build the JIT interface fixture"
    tmp_path = tmp_path_factory.mktemp("jit_interface")
    source = tmp_path / "two.c"
    source.write_text(SOURCE)
    subprocess.run(["gcc", "-c", "-g0", "-O0", "-o", "tmp.o", source.name],
                   cwd=tmp_path, check=True)
    listing = subprocess.run(["nm", "-S", "--defined-only", "tmp.o"], cwd=tmp_path,
                             check=True, capture_output=True, text=True, errors="replace").stdout
    functions = []
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in "Tt":
            functions.append((fields[3], int(fields[0], 16), int(fields[1], 16)))
    assert sorted(name for name, _, _ in functions) == ["jit_add", "jit_mul"], listing
    return Path(tmp_path / "tmp.o").read_bytes(), functions


def descriptor(first: int, relevant: int = 0, version: int = 1, action: int = 1) -> bytes:
    """struct jit_descriptor {uint32 version, action_flag; entry *relevant, *first}."""
    return struct.pack("<IIQQ", version, action, relevant, first)


def entry(following: int, previous: int, symfile: int, size: int) -> bytes:
    """struct jit_code_entry {entry *next, *prev; const char *symfile_addr; u64 size}."""
    return struct.pack("<QQQQ", following, previous, symfile, size)


def expected(functions) -> List[Region]:
    return by_start([Region(value, value + size, "gdb-jit", name)
                     for name, value, size in functions])


def by_start(regions: List[Region]) -> List[Region]:
    return sorted(regions, key=lambda r: (r.start, r.name))


def test_two_entries_the_garbage_one_is_skipped(object_file):
    data, functions = object_file
    memory = BytesMemory({
        DESCRIPTOR: descriptor(FIRST, relevant=SECOND),
        FIRST: entry(SECOND, 0, SYMFILE, len(data)),
        SECOND: entry(0, FIRST, GARBAGE, len(GARBAGE_BYTES)),
        SYMFILE: data,
        GARBAGE: GARBAGE_BYTES,
    })
    regions = read_jit_interface(memory, DESCRIPTOR)
    assert by_start(regions) == expected(functions)
    assert {r.source for r in regions} == {"gdb-jit"}
    assert {r.name: r.size for r in regions} == {name: size for name, _, size in functions}
    assert all(r.size > 0 for r in regions)


def test_garbage_first_does_not_hide_what_follows(object_file):
    data, functions = object_file
    memory = BytesMemory({
        DESCRIPTOR: descriptor(FIRST),
        FIRST: entry(SECOND, 0, GARBAGE, len(GARBAGE_BYTES)),
        SECOND: entry(0, FIRST, SYMFILE, len(data)),
        SYMFILE: data,
        GARBAGE: GARBAGE_BYTES,
    })
    assert by_start(read_jit_interface(memory, DESCRIPTOR)) == expected(functions)


@pytest.mark.parametrize("symfile, size", [
    (SYMFILE + 0x10000, 64),          # unreadable image
    (SYMFILE, 0),                     # empty
    (SYMFILE, MAX_SYMFILE + 1),       # too large to believe
    (GARBAGE, 3),                     # shorter than an ELF header
])
def test_unusable_images_are_skipped(object_file, symfile, size):
    data, functions = object_file
    memory = BytesMemory({
        DESCRIPTOR: descriptor(FIRST),
        FIRST: entry(SECOND, 0, symfile, size),
        SECOND: entry(0, FIRST, SYMFILE, len(data)),
        SYMFILE: data,
        GARBAGE: GARBAGE_BYTES,
    })
    assert by_start(read_jit_interface(memory, DESCRIPTOR)) == expected(functions)


def test_a_list_that_loops_ends(object_file):
    data, functions = object_file
    segments: Dict[int, bytes] = {
        DESCRIPTOR: descriptor(FIRST),
        FIRST: entry(FIRST, FIRST, SYMFILE, len(data)),   # next points to itself
        SYMFILE: data,
    }
    assert by_start(read_jit_interface(BytesMemory(segments), DESCRIPTOR)) == expected(
        functions)
    # A longer cycle: FIRST -> SECOND -> FIRST; each image is read once.
    segments[FIRST] = entry(SECOND, SECOND, SYMFILE, len(data))
    segments[SECOND] = entry(FIRST, FIRST, GARBAGE, len(GARBAGE_BYTES))
    segments[GARBAGE] = GARBAGE_BYTES
    assert by_start(read_jit_interface(BytesMemory(segments), DESCRIPTOR)) == expected(
        functions)


def test_an_unreadable_entry_ends_the_list_keeping_what_was_read(object_file):
    data, functions = object_file
    memory = BytesMemory({
        DESCRIPTOR: descriptor(FIRST),
        FIRST: entry(SECOND, 0, SYMFILE, len(data)),      # SECOND is not in memory
        SYMFILE: data,
    })
    assert by_start(read_jit_interface(memory, DESCRIPTOR)) == expected(functions)


def test_an_unreadable_descriptor_gives_nothing():
    assert read_jit_interface(BytesMemory({}), DESCRIPTOR) == []
    # Only version/action readable: `first` is beyond the recorded bytes.
    assert read_jit_interface(BytesMemory({DESCRIPTOR: descriptor(FIRST)[:16]}),
                              DESCRIPTOR) == []


def test_an_empty_list_gives_nothing():
    assert read_jit_interface(BytesMemory({DESCRIPTOR: descriptor(0)}), DESCRIPTOR) == []



def test_relocatable_objects_place_functions_in_their_loaded_sections(tmp_path):
    """LLVM's JITs register relocatable objects whose sections carry the addresses they
    were loaded at: a function is at its section's sh_addr plus its value."""
    import io
    import struct
    import subprocess

    from elftools.elf.elffile import ELFFile

    from jit_unwind.regions.jit_interface import read_jit_interface
    from jit_unwind.target import BytesMemory

    source = tmp_path / "two.c"
    source.write_text("int add(int a, int b) { return a + b; }\n"
                      "int mul(int a, int b) { int r = 0; for (int i = 0; i < b; i++) r += a;"
                      " return r; }\n")
    subprocess.run(["gcc", "-c", "-g0", "-O0", "-o", str(tmp_path / "two.o"), str(source)],
                   check=True)
    data = bytearray((tmp_path / "two.o").read_bytes())
    load = 0x7F0000400000
    elf = ELFFile(io.BytesIO(bytes(data)))
    text = elf.get_section_index(".text")
    struct.pack_into("<Q", data, elf["e_shoff"] + text * elf["e_shentsize"] + 0x10, load)
    offsets = {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()
               if s.name in ("add", "mul")}
    memory = BytesMemory({
        0x601040: struct.pack("<IIQQ", 1, 1, 0, 0x7F0000001000),
        0x7F0000001000: struct.pack("<QQQQ", 0, 0, 0x7F0000100000, len(data)),
        0x7F0000100000: bytes(data)})
    regions = read_jit_interface(memory, 0x601040)
    assert {r.name: r.start for r in regions} == {name: load + offset
                                                  for name, offset in offsets.items()}
