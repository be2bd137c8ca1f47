"""The CLI's checks of its input without a core or a debugger (issue 34, items 4 and 8):
the comparison of a file's segments with a core's mappings of its program, the build ID
note, and the PATH an LLDB that embeds a Python of its own runs with."""

import struct

from jit_unwind.cli.core_check import GivenFile, _laid_out_as
from jit_unwind.elf.notes import gnu_build_id
from jit_unwind.cli.debuggers import Debugger, debugger_env

# A PIE's PT_LOADs (file offset, address, file size) and where a process mapped them at
# 0x555555554000: text, read-only data, and the data split by RELRO's mprotect.
LOADS = [(0, 0, 0x8aa08), (0x8b000, 0x8b000, 0x2965d9), (0x322000, 0x322000, 0x18c960),
         (0x4af860, 0x4b0860, 0xe9b08)]
BASE = 0x555555554000
MAPPINGS = [(BASE, BASE + 0x8b000, 0), (BASE + 0x8b000, BASE + 0x322000, 0x8b000),
            (BASE + 0x322000, BASE + 0x4af000, 0x322000),
            (BASE + 0x4b0000, BASE + 0x4f0000, 0x4af000),  # RELRO, read-only now
            (BASE + 0x4f0000, BASE + 0x59b000, 0x4ef000)]


def given(loads, size=0x600000):
    return GivenFile("/x", 62, 3, size, loads, None)


def test_the_programs_segments_where_the_core_maps_them():
    assert _laid_out_as(given(LOADS), MAPPINGS)


def test_another_layout_is_not_the_program():
    moved = [(o, v, s) for o, v, s in LOADS[:3]] + [(0x4b0000, 0x4b1000, 0xe9b08)]
    assert not _laid_out_as(given(moved), MAPPINGS)
    assert not _laid_out_as(given(LOADS[:1] + [(0x8b000, 0x8b000, 0x100000)] + LOADS[2:]),
                            MAPPINGS)


def test_nothing_to_compare_is_no_mismatch():
    assert _laid_out_as(given(LOADS), [])
    assert _laid_out_as(given([]), MAPPINGS)


def note(name: bytes, kind: int, desc: bytes) -> bytes:
    def padded(data):
        return data + b"\0" * (-len(data) % 4)
    return struct.pack("<III", len(name), len(desc), kind) + padded(name) + padded(desc)


def test_the_gnu_build_id_note_among_others():
    build_id = bytes(range(20))
    data = note(b"GNU\0", 1, b"\0" * 16) + note(b"XYZ\0", 3, b"\1" * 8) + \
        note(b"GNU\0", 3, build_id)
    assert gnu_build_id(data) == build_id.hex()
    assert gnu_build_id(note(b"GNU\0", 1, b"\0" * 16)) is None
    assert gnu_build_id(b"") is None


def test_lldb_19_runs_without_virtual_environments_on_path(tmp_path, monkeypatch):
    """Its embedded Python finds its prefix by the first python3 on PATH: a venv's
    would make the venv its prefix.  An LLDB inside a venv keeps PATH as it is."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python3").write_text("")
    path = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    env = debugger_env(Debugger("lldb", "/usr/bin/lldb-19"))
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert "VIRTUAL_ENV" not in env
    for kept in (Debugger("lldb", str(venv / "bin" / "lldb")), Debugger("gdb", "/usr/bin/gdb")):
        env = debugger_env(kept)
        assert env["PATH"] == path and env["VIRTUAL_ENV"] == str(venv)
