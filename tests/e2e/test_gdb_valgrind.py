"""A program under valgrind's gdbserver (GDB's testsuite, gdb.base/valgrind-disp-step.exp;
issue 34): ``next`` over a breakpoint ends at the next line, as in plain GDB, in GDB 13
and GDB 18.

GDB stops the program itself inside a ``next`` and asks the unwinders about the frames;
the plugin's region map then asked GDB's "info proc mappings", which fails under vgdb (no
real pid), and a command failing inside Python's gdb.execute makes GDB 13 give the prompt
back before the step ends: the next command said "Cannot execute this command while the
target is running" (GDB 18 did not; it is checked all the same).  valgrind and its vgdb
come from `make apt-deps`."""

import re
import shutil
import subprocess

import pytest

from tests.support import GDB_BINARIES, fixture_binary, run_gdb

GDBS = ["gdb13", "gdb18"]
_TARGET_REMOTE = re.compile(r"target remote \| (\S*vgdb\S*) .*--pid=(\d+)")


def _under_valgrind(gdb, tmp_path, commands, plugin):
    """GDB's output for ``commands`` run against build/stop_loop held by valgrind's
    gdbserver at its first instruction."""
    valgrind = shutil.which("valgrind")
    assert valgrind, "valgrind is missing: run `make apt-deps`"
    program = fixture_binary("stop_loop")
    prefix = tmp_path / "vgdb"  # this test's own FIFOs, apart from other valgrinds
    process = subprocess.Popen(
        [valgrind, "--vgdb=yes", "--vgdb-error=0", f"--vgdb-prefix={prefix}",
         str(program), "3"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        said = []
        for line in process.stderr:  # valgrind says how to connect, then waits for GDB
            said.append(line)
            found = _TARGET_REMOTE.search(line)
            if found:
                break
            assert len(said) < 200, "".join(said)
        else:
            raise AssertionError("valgrind never waited for GDB:\n" + "".join(said))
        vgdb = f"{found.group(1)} --vgdb-prefix={prefix} --pid={found.group(2)}"
        return run_gdb(GDB_BINARIES[gdb],
                       [f"target remote | {vgdb}", *commands, "monitor v.kill"],
                       [program], plugin=plugin)
    finally:
        process.kill()
        process.communicate(timeout=60)


_STEPS = ["break main", "continue", "delete breakpoints",
          "break",  # at the stop's own pc: next must step over it
          "next", "break", "next", "set displaced-stepping on", "break", "next",
          "info line *$pc"]


def _line_numbers(output):
    """The source lines the stops printed ("27\t  foo ();"), in order."""
    return [int(n) for n in re.findall(r"^(\d+)\t", output, re.M)]


@pytest.mark.parametrize("gdb", GDBS)
def test_next_over_a_breakpoint_under_vgdb_ends_at_the_next_line(gdb, tmp_path):
    ours = _under_valgrind(gdb, tmp_path, _STEPS, plugin=True)
    plain = _under_valgrind(gdb, tmp_path, _STEPS, plugin=False)
    for output in (ours, plain):
        assert "while the target is running" not in output, output
        assert "while the selected thread is running" not in output, output
    lines = _line_numbers(ours)
    assert len(lines) == 4 and lines == sorted(set(lines)), ours  # main's line, 3 nexts
    assert lines == _line_numbers(plain), f"{ours}\n---- plain GDB:\n{plain}"
    assert re.search(rf"^Line {lines[-1]} of .*stop_loop\.c", ours, re.M), ours
