"""Entry code running from a second, file-backed mapping of its file's code
(tests/fixtures/remapped_entry.c), as V8 runs node's embedded builtins from a copy it
maps near its JIT code: the copy of Builtins_JSEntry (V8's entry frame layout, no CFI)
called by invoke_entry calls JIT code that clobbers rbx and r12-r15.  No debugger knows
the copy as a module's code; the plugin names it from the executable's symbols at the
copy's file offset and unwinds it by V8's entry record (unwind/runtime_entries.py), so
invoke_entry, whose CFA is rbx-based, gets the rbx the entry code saved: ``bt`` goes on
to main and _start.  On LLDB's core (a minidump) the file offsets are those of the
minidump's copy of /proc/PID/maps.  Without the record the JIT code's rbx would be passed on and the
walk would end in garbage.

node 20 here runs JSEntry from node's own mapping (only JIT code and the builtins it
calls run from the copy): docs/runtimes.md.
"""

import re

import pytest

from tests.driver import driver
from tests.e2e.test_cli import jit_unwind
from tests.support import fixture_binary

DEBUGGERS = ["gdb13", "gdb18", "lldb23"]
# The true frames from the stop outwards.
EXPECTED = ["entry_stop", "[jit 0x", "Builtins_JSEntry", "invoke_entry", "main"]
PAST_MAIN = ["__libc_start_call_main", "__libc_start_main", "_start"]


def program():
    return [fixture_binary("remapped_entry")]


def frame_lines(text):
    """The frame lines of ``bt`` from entry_stop outwards (GDB's ``#N``, LLDB's
    ``frame #N:``)."""
    lines = [line for line in text.splitlines() if re.match(r"\s*(\* )?(frame )?#\d+", line)]
    start = next((i for i, line in enumerate(lines) if "entry_stop" in line), None)
    assert start is not None, text
    return lines[start:]


def assert_true_stack(lines, gdb):
    listing = "\n".join(lines)
    assert len(lines) >= len(EXPECTED), listing
    for line, name in zip(lines, EXPECTED):
        assert name in line, listing
    rest = lines[len(EXPECTED):]
    # GDB (backtrace past-main on) shows main's callers; LLDB's walk ends at main.
    assert len(rest) == (len(PAST_MAIN) if gdb else 0), listing
    for line, name in zip(rest, PAST_MAIN):
        assert name in line, listing
    assert "[guess" not in listing and "unwind stopped" not in listing, listing
    if gdb:
        assert "[via entry-record]" in lines[2], listing


@pytest.mark.parametrize("name", DEBUGGERS)
def test_entry_code_in_a_second_mapping_of_the_executable(name, tmp_path):
    gdb = name.startswith("gdb")
    debugger = driver(name)
    core = tmp_path / debugger.core_name()
    settings = ["set jit-unwind show-method on", "set backtrace past-main on"] if gdb \
        else ["jit-unwind show-method on"]
    live = debugger.launch(program(), [*settings, "bt", "py-mixed-bt"], core=core)
    assert_true_stack(frame_lines(live.output("bt")), gdb)
    assert_mixed_stack(live.output("py-mixed-bt"))
    from_core = debugger.open_core(program(), core, [*settings, "bt"])
    assert_true_stack(frame_lines(from_core.output("bt")), gdb)
    if name == "gdb18":  # the core reader without a debugger, on GDB's core
        result = jit_unwind("core", "--debugger", "none", core, program()[0])
        assert "Traceback" not in result.stderr, result.stderr
        assert_mixed_stack(result.stdout)
    core.unlink()


def assert_mixed_stack(text):
    """py-mixed-bt's (and ``jit-unwind core``'s) listing: the copy named from the
    file, between the JIT frame and invoke_entry."""
    lines = [line for line in text.splitlines() if re.match(r"#\d+ ", line)]
    start = next((i for i, line in enumerate(lines) if "entry_stop" in line), None)
    assert start is not None, text
    listing = "\n".join(lines)
    for line, name in zip(lines[start:], EXPECTED):
        assert name in line, listing
    rest = lines[start + len(EXPECTED):]  # main's callers where the walk goes on
    assert len(rest) in (0, len(PAST_MAIN)), listing
    for line, name in zip(rest, PAST_MAIN):
        assert name in line, listing
    assert "??" not in listing and "[guess" not in listing, listing
