"""Edge cases of JIT code under GDB 13 and 18 (issue 10, part 2): a core whose perf map
is gone, a perf map left by a dead process with the same pid, JIT code freed and other
code mapped at its address between two stops, two core files loaded one after the
other from one path.  The toy JIT (tests/fixtures/toyjit.c) provides the code; names
and unwinding are checked frame by frame with tests/toyjit_expect.py."""

import json
import os
import re
import shutil
import subprocess

import pytest

from tests.jit_python import CACHE, INTERPRETERS, fixture_python
from tests.python_expect import RECURSE, expected_recursion, python_frames_with_parents
from tests.support import (PRINT_PID, fixture_binary, parse_backtrace, remove_perf_map,
                           remove_process_files, run_gdb)
from tests.toyjit_expect import check_backtrace

SHOW_METHOD = "set jit-unwind show-method on"
ROW = re.compile(r"^(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S+)\s*(.*)$", re.M)


def _pid(output):
    return int(re.search(r"inferior-pid (\d+)", output).group(1))


def _perf_rows(output):
    """(start, name) of the perf-map rows of the last ``info jit-regions``."""
    table = output.rsplit("start ", 1)[-1]
    return [(int(m.group(1), 16), m.group(5)) for m in ROW.finditer(table)
            if m.group(4) == "perf-map"]


def _live_with_core(gdb, tmp_path, args):
    """Run the toy JIT to its stop, write a core; returns (output, core, perf map text)."""
    core = tmp_path / "toyjit.core"
    output = run_gdb(gdb, ["run", PRINT_PID, f"gcore {core}"],
                     [fixture_binary("toyjit"), *args])
    assert core.exists(), output
    path = f"/tmp/perf-{_pid(output)}.map"
    try:
        with open(path) as handle:
            perf_map = handle.read()
    finally:
        remove_perf_map(output)
    return output, core, perf_map


def test_core_whose_perf_map_is_gone(gdb, tmp_path):
    """The process wrote a perf map, then it was deleted (the process exited, /tmp was
    cleaned): the core still unwinds through every JIT frame, with region names."""
    output, core, perf_map = _live_with_core(gdb, tmp_path,
                                             ["mixed", "2", "sigtrap", "--perf-map"])
    assert "toy::jit_fp" in perf_map
    assert not os.path.exists(f"/tmp/perf-{_pid(output)}.map")
    from_core = run_gdb(gdb, [SHOW_METHOD, "bt", "info jit-regions"],
                        [fixture_binary("toyjit")], core=core)
    check_backtrace(parse_backtrace(from_core), "mixed", 2, perf_map=False)
    assert "warning: /tmp/perf" not in from_core and _perf_rows(from_core) == [], from_core


def _fake_perf_map(pid, real_text, rename="stale::"):
    """Write /tmp/perf-PID.map: the real map's lines under other names."""
    path = f"/tmp/perf-{pid}.map"
    with open(path, "w") as handle:
        handle.write(real_text.replace("toy::", rename))
    return path


def test_perf_map_written_after_the_core_is_not_used(gdb, tmp_path):
    """After the process died, another process with the same pid wrote a perf map at
    the very addresses of the core's JIT code (same program, no ASLR under GDB): it was
    written after the core file, so its names are not shown; the unwinding is the same."""
    output, core, perf_map = _live_with_core(gdb, tmp_path,
                                             ["mixed", "2", "sigtrap", "--perf-map"])
    path = _fake_perf_map(_pid(output), perf_map)
    try:
        dumped = os.stat(core).st_mtime
        os.utime(path, (dumped + 60, dumped + 60))
        from_core = run_gdb(gdb, [SHOW_METHOD, "bt", "info jit-regions"],
                            [fixture_binary("toyjit")], core=core)
    finally:
        os.unlink(path)
    assert "stale::" not in from_core.split("warning:", 1)[0], from_core
    check_backtrace(parse_backtrace(from_core), "mixed", 2, perf_map=False)
    assert f"warning: {path} was written after the core file" in from_core, from_core
    assert _perf_rows(from_core) == [], from_core


def test_perf_map_lines_outside_jit_code_are_not_used(gdb, tmp_path):
    """A perf map older than the core whose lines name no JIT code of this process (the
    program's own code, unmapped memory): the C frames keep their names, the JIT frames
    are unwound and named as without a map, and info jit-regions leaves the lines out."""
    toyjit = fixture_binary("toyjit")
    core = tmp_path / "toyjit.core"
    addresses = "python print('call-jit-at', int(gdb.parse_and_eval('(long)&call_jit')))"
    output = run_gdb(gdb, ["run", PRINT_PID, addresses, f"gcore {core}"],
                     [toyjit, "mixed", "2", "sigtrap"])
    call_jit = int(re.search(r"call-jit-at (\d+)", output).group(1))
    path = f"/tmp/perf-{_pid(output)}.map"
    with open(path, "w") as handle:
        handle.write(f"{call_jit:x} 200 stale::not_jit_code\n"
                     f"{0x10000:x} 1000 stale::unmapped\n")
    try:
        dumped = os.stat(core).st_mtime
        os.utime(path, (dumped - 60, dumped - 60))
        from_core = run_gdb(gdb, [SHOW_METHOD, "bt", "info jit-regions"], [toyjit],
                            core=core)
    finally:
        os.unlink(path)
    assert "stale::" not in from_core, from_core
    check_backtrace(parse_backtrace(from_core), "mixed", 2, perf_map=False)


WRITE_STALE_MAP = """\
import os, time
import gdb
pid = gdb.selected_inferior().pid
path = f"/tmp/perf-{pid}.map"
with open(path, "w") as handle:
    handle.write(open(os.environ["JIT_UNWIND_TEST_MAP"]).read())
an_hour_ago = time.time() - 3600
os.utime(path, (an_hour_ago, an_hour_ago))
print("stale map written for", pid)
"""


def test_live_perf_map_left_by_a_dead_process(gdb, tmp_path):
    """A live process that writes no perf map, while /tmp holds one an earlier process
    with its pid left an hour ago naming the same addresses: not used."""
    toyjit = fixture_binary("toyjit")
    _output, _core, perf_map = _live_with_core(gdb, tmp_path,
                                               ["mixed", "2", "sigtrap", "--perf-map"])
    stale = tmp_path / "stale.map"
    stale.write_text(perf_map.replace("toy::", "stale::"))
    script = tmp_path / "write_stale_map.py"
    script.write_text(WRITE_STALE_MAP)
    os.environ["JIT_UNWIND_TEST_MAP"] = str(stale)
    try:
        live = run_gdb(gdb, ["starti", PRINT_PID, f"source {script}", "continue",
                             SHOW_METHOD, "bt", "info jit-regions"],
                       [toyjit, "mixed", "2", "sigtrap"])
    finally:
        del os.environ["JIT_UNWIND_TEST_MAP"]
        # The stale map is backdated, so not "written during the session": removed
        # whatever its age (no session output given).
        remove_process_files(re.findall(r"inferior-pid (\d+)", locals().get("live", "")),
                             names=("perf-{}.map",))
    assert "stale map written for" in live, live
    assert "stale::" not in live.split("warning:", 1)[0], live
    check_backtrace(parse_backtrace(live), "mixed", 2, perf_map=False)
    assert "an earlier process with the same pid left it" in live, live
    assert _perf_rows(live) == [], live


@pytest.mark.parametrize("perf_map", [False, True], ids=["no-perf-map", "perf-map"])
def test_jit_code_freed_and_reused_between_two_stops(gdb, tmp_path, perf_map):
    """toyjit --remap stops in frame-pointer JIT code, then frees it and maps frameless
    code at the same address and stops again: the second bt and info jit-regions show
    the new code (names, unwinding), nothing kept from the first stop."""
    core1, core2 = tmp_path / "first.core", tmp_path / "second.core"
    args = ["fp", "1", "sigtrap", "--remap"] + (["--perf-map"] if perf_map else [])
    output = run_gdb(gdb, [SHOW_METHOD, "run", PRINT_PID, "bt", "info jit-regions",
                           f"gcore {core1}", "echo SECOND-STOP\\n", "continue", "bt",
                           "info jit-regions", f"gcore {core2}"],
                     [fixture_binary("toyjit"), *args])
    try:
        first, second = output.split("SECOND-STOP\n", 1)
        check_backtrace(parse_backtrace(first), "fp", 1, perf_map)
        check_backtrace(parse_backtrace(second), "frameless", 1, perf_map)
        # The frameless function now starts where the fp function started.
        fp_frame = next(f for f in parse_backtrace(first) if "[via frame-pointer]" in f.line
                        or "toy::jit_fp " in f.line)
        frameless = next(f for f in parse_backtrace(second) if "[jit " in f.line
                         or "toy::jit_frameless" in f.line)
        start_of = lambda line: int(re.search(r"0x([0-9a-f]+) in", line).group(1), 16)
        assert start_of(fp_frame.line) >> 12 == start_of(frameless.line) >> 12
        if perf_map:
            before, after = dict(_perf_rows(first)), dict(_perf_rows(second))
            fp_start = next(a for a, n in before.items() if n == "toy::jit_fp")
            assert after[fp_start] == "toy::jit_frameless", second
        # Two cores loaded one after the other from one path in one GDB session.  The
        # perf map got lines after the first core was dumped (for the code mapped
        # since, at the same address): with that core it is not used at all.  GDB 18
        # (not 13) unwinds the second core with the first one's memory cache, with or
        # without the plugin (plain GDB 18: 6 runs in 6): the test flushes that cache.
        same_path = tmp_path / "toyjit.core"
        os.link(core1, same_path)
        both = run_gdb(gdb, [SHOW_METHOD, "bt", "info jit-regions",
                             "echo SECOND-CORE\\n", f"shell cp {core2} {same_path}.new",
                             f"shell mv {same_path}.new {same_path}",
                             f"core-file {same_path}", "maintenance flush dcache", "bt",
                             "info jit-regions"],
                       [fixture_binary("toyjit")], core=same_path)
        first, second = both.split("SECOND-CORE\n", 1)
        check_backtrace(parse_backtrace(first), "fp", 1, perf_map=False)
        assert ("was written after the core file" in first) == perf_map, first
        check_backtrace(parse_backtrace(second), "frameless", 1, perf_map)
        assert "warning: /tmp/perf" not in second, second
    finally:
        remove_perf_map(output)


def test_two_cores_of_different_programs_at_one_path(gdb, tmp_path):
    """One session, one program path, two builds: a core of CPython 3.14 run as
    ./python3, then that file replaced by CPython 3.13 and a core of it loaded with
    ``file`` and ``core-file``: Python frames of each come from its own build (symbol
    tables and sections are read again when the file at a path changed)."""
    python = tmp_path / "python3"
    cores = {}
    for minor in ("3.14", "3.13"):
        stripped = tmp_path / f"python{minor}"
        shutil.copy(fixture_python(minor), stripped)
        subprocess.run(["strip", str(stripped)], check=True)
        shutil.copy(stripped, python)
        cores[minor] = tmp_path / f"{minor}.core"
        home = f"set environment PYTHONHOME={CACHE / INTERPRETERS[minor][0]}"
        run_gdb(gdb, ["run", f"gcore {cores[minor]}"], [python, RECURSE], early=[home],
                plugin=False)
        assert cores[minor].exists()
    shutil.copy(tmp_path / "python3.14", python)
    output = run_gdb(gdb, ["py-mixed-bt", "echo SECOND-CORE\\n",
                           f"shell cp {tmp_path / 'python3.13'} {python}", f"file {python}",
                           f"core-file {cores['3.13']}", "py-mixed-bt --json"],
                     [python], core=cores["3.14"])
    first, second = output.split("SECOND-CORE\n", 1)
    assert [e for e, _ in python_frames_with_parents(first, mixed=True)] == \
        expected_recursion(3), output
    document = json.loads(second[second.index("{"):second.rindex("}") + 1])
    assert document["python_version"].startswith("3.13"), second
    frames = [(f["function"], f["file"], f["line"]) for f in document["threads"][0]["python"]]
    assert frames == expected_recursion(3), second
