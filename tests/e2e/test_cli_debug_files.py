"""``jit-unwind core`` through GDB reads decompressed copies of the core's libraries'
separate debug files (made once, cli/gdb_debug_files.py): the same stacks as GDB
reading the compressed originals, on a real CPython 3.14 JIT core."""

import json
import os

from jit_unwind.cli.gdb_debug_files import ENV, _debug_file
from jit_unwind.elf.rawelf import RawElf
from jit_unwind.regions.corefile import read_core_mappings
from tests.e2e.test_cli import jit_core, jit_unwind  # noqa: F401

SHF_COMPRESSED = 0x800


def compressed_debug_files(core, python):
    """The compressed debug files of the core's files, as the module finds them."""
    mappings, _ = read_core_mappings(str(core), executable=str(python))
    found = (_debug_file(path) for path in {m.path for m in mappings if m.path.startswith("/")})
    return sorted(path for path in found if path)


def test_same_stacks_from_the_decompressed_copies(jit_core, tmp_path):  # noqa: F811
    python, core = jit_core
    cache = {"XDG_CACHE_HOME": str(tmp_path)}
    runs = [jit_unwind("core", "--json", core, python, env=dict(cache, **{ENV: "0"})),
            jit_unwind("core", "--json", core, python, env=cache),  # makes the copies
            jit_unwind("core", "--json", core, python, env=cache)]  # reads them
    for result in runs:
        assert result.returncode == 0, result
        assert "Traceback" not in result.stderr, result.stderr
    documents = [json.loads(result.stdout) for result in runs]
    assert documents[0] == documents[1] == documents[2]
    copies = os.path.join(tmp_path, "jit-unwind", "gdb-debug-files", ".build-id")
    expected = compressed_debug_files(core, python)
    if expected:  # libc's static functions are named from its debug file
        assert any(frame["function"] == "__libc_start_call_main"
                   for thread in documents[0]["threads"] for frame in thread["frames"])
    made = sorted(os.path.join(directory, name) for directory, _, names in os.walk(copies)
                  for name in names)
    # One copy per compressed original, under the same build-id name, its DWARF plain.
    assert [path.split(os.sep)[-2:] for path in made] == \
        [path.split(os.sep)[-2:] for path in expected]
    for path in made:
        with open(path, "rb") as handle:
            sections = RawElf(handle, path).sections
        assert ".debug_info" in sections
        assert not any(name.startswith(".debug") and section["sh_flags"] & SHF_COMPRESSED
                       for name, section in sections.items())
