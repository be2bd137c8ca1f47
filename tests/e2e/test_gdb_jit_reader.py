"""JIT code GDB knows itself and stacks GDB cannot read (GDB's own testsuite,
gdb.base/jit-reader.exp; issue 34): what GDB names and unwinds stays GDB's, and the
plugin never makes up a frame GDB says does not exist, in GDB 13 and GDB 18.

build/jit_reader_host (tests/fixtures/jit_reader_host.c) runs JIT code that it describes
through GDB's JIT reader API; build/jit_reader.so (jit_reader.c) is its reader."""

import re

import pytest

from tests.support import GDB_BINARIES, fixture_binary, parse_backtrace, run_gdb

GDBS = ["gdb13", "gdb18"]


def _session(gdb, mode, commands, plugin, reader):
    program = fixture_binary("jit_reader_host")
    before = [f"jit-reader-load {fixture_binary('jit_reader.so')}"] if reader else []
    return run_gdb(GDB_BINARIES[gdb], ["run", *commands], [program, mode], plugin=plugin,
                   before=before)


def _frames(output):
    return [(frame.level, frame.function) for frame in parse_backtrace(output)]


@pytest.mark.parametrize("gdb", GDBS)
@pytest.mark.parametrize("mode", ["named", "mangled"])
def test_a_jit_readers_code_keeps_gdbs_names_and_frames(gdb, mode):
    """With the runtime's reader loaded, bt is plain GDB's: the reader's names
    (jit_add, jit_mangle), main as their caller (the reader unwinds jit_mangle's flipped
    stack pointer; GDB's own rules the frameless jit_add)."""
    ours = _session(gdb, mode, ["bt", "up"], plugin=True, reader=True)
    plain = _session(gdb, mode, ["bt", "up"], plugin=False, reader=True)
    name = {"named": "jit_add", "mangled": "jit_mangle"}[mode]
    assert _frames(ours)[:2] == [(0, name), (1, "main")], ours
    assert _frames(ours) == _frames(plain), f"{ours}\n---- plain GDB:\n{plain}"
    assert re.search(r"^#1 .* in main \(", ours, re.M), ours  # up reaches main


@pytest.mark.parametrize("gdb", GDBS)
def test_a_stack_gdb_cannot_read_is_gdbs_to_report(gdb):
    """No reader: the JIT frame's stack pointer points nowhere.  GDB's own words, and no
    frame above it: "Backtrace stopped: Cannot access memory at address SP", "Initial
    frame selected; you cannot go up."."""
    commands = ["bt", "up", "info frame"]
    ours = _session(gdb, "mangled", commands, plugin=True, reader=False)
    plain = _session(gdb, "mangled", commands, plugin=False, reader=False)
    for output in (ours, plain):
        assert re.search(r"^Backtrace stopped: Cannot access memory at address 0x",
                         output, re.M), output
        assert "Initial frame selected; you cannot go up." in output, output
    assert len(parse_backtrace(ours)) == 1, ours


@pytest.mark.parametrize("gdb", GDBS)
def test_a_walk_the_plugin_ends_has_no_frame_after_it(gdb):
    """No reader, the JIT frame's stack a page of zeros and rbp zero: no strategy finds
    its caller, and bt says so on the frame.  GDB 13 has no way for an unwinder to say
    "no caller" but a made-up frame ("#1 0x0000000000000000 in ?? ()" was what up and
    frame 1 reached); now there is none to select."""
    ours = _session(gdb, "zeroed", ["bt", "up", "frame 1", "info frame"], plugin=True,
                    reader=False)
    frames = parse_backtrace(ours)
    assert len(frames) == 1, ours
    assert frames[0].function.startswith("[jit 0x"), ours
    assert "[unwind stopped: no strategy found the caller of this JIT frame]" in ours, ours
    assert "Initial frame selected; you cannot go up." in ours, ours
    assert "No frame at level 1." in ours, ours
    assert not re.search(r"^#1 ", ours, re.M), ours
    assert "saved rip = <not saved>" in ours, ours

