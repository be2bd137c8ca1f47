"""aarch64 through qemu-user and gdb-multiarch: the toy JIT for aarch64 and Debian's arm64
python3.11, on qemu's core files and live through qemu's gdb stub.

What holds before jit-unwind unwinds aarch64: the plugin loads into gdb-multiarch (GDB 13)
and GDB 18 without a Python error, and its backtrace keeps every frame GDB finds on its
own; with a perf map, the JIT frames are named.
"""

import re
import time
from pathlib import Path
from typing import Dict, List

import pytest

from tests import aarch64, toyjit_expect
from tests.e2e.test_cli import jit_unwind
from tests.support import (assert_no_python_failure, parse_backtrace, remove_process_files,
                           session_output)

SHOW_METHOD = "set jit-unwind show-method on"
# The toy JIT's stops: each frameless level runs through the 3.14-shaped entry shim;
# "leaf" stops in a JIT leaf function on brk #0, x30 still holding its return address.
TOYJIT_CASES: Dict[str, List[str]] = {
    "fp": ["fp", "2", "sigtrap"],
    "frameless": ["frameless", "2", "sigtrap"],
    "mixed": ["mixed", "3", "sigtrap"],
    "leaf": ["mixed", "2", "leaf"],
    "mixed-perf-map": ["mixed", "1", "sigtrap", "--perf-map"],
}
PYTHON_SCRIPT = """\
import os, signal
def inner(n):
    os.kill(os.getpid(), signal.SIGTRAP)
def middle(n):
    return inner(n + 1)
def outer():
    return middle(1)
outer()
"""
_PC = re.compile(r"^#\d+\s+(0x[0-9a-f]+) in ", re.M)


@pytest.fixture(scope="session")
def aarch64_fixtures():
    aarch64.ensure_fixtures()


@pytest.fixture(params=sorted(aarch64.GDBS))
def agdb(request, aarch64_fixtures):
    """Each test that takes ``agdb`` runs with gdb-multiarch (13) and with GDB 18."""
    return aarch64.GDBS[request.param]


@pytest.fixture(scope="session")
def toyjit_cores(aarch64_fixtures, tmp_path_factory):
    """One qemu core per case of TOYJIT_CASES (and of the PIE build), made once."""
    directory = tmp_path_factory.mktemp("aarch64-cores")
    started = time.time()
    cores = {name: aarch64.run_to_core([aarch64.TOYJIT, *args], directory)
             for name, args in TOYJIT_CASES.items()}
    cores["mixed-pie"] = aarch64.run_to_core([aarch64.TOYJIT_PIE, *TOYJIT_CASES["mixed"]],
                                             directory)
    made = session_output("", started)  # their perf maps were written by then
    yield cores
    # By now a pid may be another test's process: only the maps written above go.
    remove_process_files([aarch64.core_pid(core) for core in cores.values()], made,
                         ("perf-{}.map",))
    for core in cores.values():
        core.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def python311_core(aarch64_fixtures, tmp_path_factory):
    directory = tmp_path_factory.mktemp("aarch64-python")
    script = directory / "sigtrap.py"
    script.write_text(PYTHON_SCRIPT)
    core = aarch64.run_to_core([aarch64.PYTHON311, script], directory)
    yield core
    core.unlink(missing_ok=True)


def pcs(output: str) -> List[str]:
    return _PC.findall(output)


def assert_plugin_keeps_gdbs_frames(plain: str, with_plugin: str, same_run: bool = True) -> None:
    """The plugin loaded (its setting exists, no Python error) and its backtrace has at
    least the frames GDB's own has, from the same innermost pc (``same_run``: the same
    core; two live runs may map libraries elsewhere, so only the offset in the page is
    the same)."""
    assert_no_python_failure(with_plugin)
    assert "Undefined" not in with_plugin, with_plugin
    ours, gdbs = parse_backtrace(with_plugin), parse_backtrace(plain)
    assert gdbs, plain
    assert len(ours) >= len(gdbs), f"without the plugin:\n{plain}\nwith it:\n{with_plugin}"
    ours_pc, gdbs_pc = int(pcs(with_plugin)[0], 16), int(pcs(plain)[0], 16)
    if same_run:
        assert ours_pc == gdbs_pc, with_plugin
    else:
        assert ours_pc % 4096 == gdbs_pc % 4096, with_plugin


def toyjit_program(case: str) -> Path:
    return aarch64.TOYJIT_PIE if case.endswith("-pie") else aarch64.TOYJIT


@pytest.mark.parametrize("case", [*TOYJIT_CASES, "mixed-pie"])
def test_toyjit_core_backtrace_with_the_plugin_keeps_gdbs_frames(agdb, toyjit_cores, case):
    program, core = toyjit_program(case), toyjit_cores[case]
    plain = aarch64.gdb_core(program, core, ["bt"], plugin=False, gdb=agdb)
    with_plugin = aarch64.gdb_core(program, core, [SHOW_METHOD, "bt", "info jit-regions"],
                                   gdb=agdb)
    assert_plugin_keeps_gdbs_frames(plain, with_plugin)
    assert "Program terminated with signal SIGTRAP" in plain, plain
    if case in ("fp", "frameless", "mixed"):
        assert_gdb_reaches_the_innermost_jit_frame(plain)
    if case == "leaf":
        # The signal is the leaf's brk #0, in anonymous memory: GDB has no name for it,
        # the plugin names it as JIT code.
        assert parse_backtrace(plain)[0].function == "??", plain
        assert parse_backtrace(with_plugin)[0].function.startswith("[jit 0x"), with_plugin
    if case.endswith("perf-map"):
        assert_perf_map_names(with_plugin)


def assert_gdb_reaches_the_innermost_jit_frame(plain: str) -> None:
    """The sysroot and the non-PIE build give GDB libc, toy_stop and jit_callback; the
    JIT frame after them is where GDB's own unwinding gives up."""
    names = [frame.function for frame in parse_backtrace(plain)]
    assert "raise" in names, plain
    assert names.index("jit_callback") == names.index("toy_stop") + 1, plain


def assert_perf_map_names(output: str) -> None:
    """The perf map of ``mixed 1 sigtrap --perf-map`` names both kinds of JIT function,
    and GDB, given those names, gets from the fp function through call_jit into the
    frameless one."""
    names = [frame.function.split(" [")[0] for frame in parse_backtrace(output)]
    assert "toy::jit_fp" in names and "toy::jit_frameless" in names, output
    assert names.index("toy::jit_frameless") > names.index("toy::jit_fp"), output
    assert "perf-map  toy::enter_trampoline" in output, output


@pytest.mark.parametrize("case", list(TOYJIT_CASES))
def test_toyjit_live_backtrace_with_the_plugin_keeps_gdbs_frames(agdb, case):
    program = [aarch64.TOYJIT, *TOYJIT_CASES[case]]
    outputs = []
    try:
        outputs.append(aarch64.gdb_live(program, ["bt"], plugin=False, gdb=agdb))
        outputs.append(aarch64.gdb_live(program, [SHOW_METHOD, "bt", "info jit-regions"],
                                        gdb=agdb))
    finally:
        for output in outputs:
            for pid in re.findall(r"\(process (\d+)\) killed\]", output):
                Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
    plain, with_plugin = outputs
    for output in outputs:
        assert "Program received signal SIGTRAP" in output, output
    assert_plugin_keeps_gdbs_frames(plain, with_plugin, same_run=False)
    if case.endswith("perf-map"):
        assert_perf_map_names(with_plugin)


def test_live_through_qemu10_serves_the_memory_map(agdb):
    """qemu 10's stub serves /proc/PID/maps: the JIT code's anonymous executable
    mappings are listed next to the toy JIT's own."""
    output = aarch64.gdb_live([aarch64.TOYJIT, *TOYJIT_CASES["mixed"]],
                              ["info proc mappings"], plugin=False, gdb=agdb)
    assert str(aarch64.TOYJIT.resolve()) in output, output
    anonymous_code = re.findall(r"^\s*(?:0x[0-9a-f]+\s+){3}0x0\s+r-xp\s*$",
                                output, re.M)
    assert len(anonymous_code) >= 2, output  # the functions' page and the trampoline's


def test_python311_core(agdb, python311_core):
    """Debian's stripped arm64 python3.11 on qemu's core: GDB reaches _start through its
    exported functions; the plugin keeps those frames and interleaves the Python frames
    under the eval loop, in bt and py-mixed-bt."""
    program = aarch64.PYTHON311
    plain = aarch64.gdb_core(program, python311_core, ["bt"], plugin=False, gdb=agdb)
    names = [frame.function for frame in parse_backtrace(plain)]
    assert names[0] == "kill" and names[-1] == "_start", plain
    assert "_PyEval_EvalFrameDefault" in names and "Py_BytesMain" in names, plain
    with_plugin = aarch64.gdb_core(program, python311_core,
                                   ["bt", "py-mixed-bt", "info jit-regions"], gdb=agdb)
    assert_plugin_keeps_gdbs_frames(plain, with_plugin)
    # The core has no file list: the link_map names python3.11's libraries, and its
    # own code is not taken for JIT code.
    assert "[jit " not in with_plugin and "No JIT regions" in with_plugin, with_plugin
    script = python311_core.parent / "sigtrap.py"
    functions = ["inner", "middle", "outer", "<module>"]
    mixed = [f"     [py] {function} ({script}:{line})"
             for function, line in zip(functions, (3, 5, 7, 8))]
    assert "_PyEval_EvalFrameDefault\n" + "\n".join(mixed) + "\n" in with_plugin, with_plugin
    lines = [f"    [py] {function} () at {script}:{line}"
             for function, line in zip(functions, (3, 5, 7, 8))]
    assert "_PyEval_EvalFrameDefault ()\n" + "\n".join(lines) + "\n#" in with_plugin, \
        with_plugin


def test_python311_live_interleaves_the_python_frames(agdb, tmp_path):
    """Live through qemu 10's stub (which serves the memory map), the plugin finds
    python3.11's _PyRuntime and puts the Python frames under _PyEval_EvalFrameDefault,
    in bt and in py-mixed-bt."""
    script = tmp_path / "sigtrap.py"
    script.write_text(PYTHON_SCRIPT)
    output = aarch64.gdb_live([aarch64.PYTHON311, script], ["bt", "py-mixed-bt"], gdb=agdb)
    functions = ["inner", "middle", "outer", "<module>"]
    lines = [f"    [py] {function} () at {script}:{line}"
             for function, line in zip(functions, (3, 5, 7, 8))]
    backtrace = output.split("\n#0 ", 1)[1]
    assert "_PyEval_EvalFrameDefault ()\n" + "\n".join(lines) + "\n#" in backtrace, output
    mixed = [f"     [py] {function} ({script}:{line})"
             for function, line in zip(functions, (3, 5, 7, 8))]
    assert "_PyEval_EvalFrameDefault\n" + "\n".join(mixed) + "\n" in output, output


def expected_aarch64_frames(mode: str, depth: int, leaf: bool, perf_map: bool):
    """(name pattern, strategy) of the toy JIT's true frames from the innermost JIT or
    C frame to main: as on x86-64 (tests/toyjit_expect.py), but each JIT frame is
    decoded from its function's start, found by searching back (or named by the perf
    map); a ``leaf`` stop adds the JIT leaf the brk is in, unwound through x30."""
    frames = toyjit_expect.expected_frames(mode, depth, perf_map)
    if leaf:
        frames[0] = (toyjit_expect.JIT_ANON, "prologue-search")
    method = "prologue" if perf_map else "prologue-search"
    return [(pattern, method if strategy else "") for pattern, strategy in frames]


def assert_exact_aarch64_backtrace(output: str, case: str) -> None:
    args = TOYJIT_CASES[case]
    mode, depth, stop = args[0], int(args[1]), args[2]
    expected = expected_aarch64_frames(mode, depth, stop == "leaf", "--perf-map" in args)
    frames = parse_backtrace(output)
    names = [frame.function for frame in frames]
    first = next(index for index, name in enumerate(names)
                 if name.startswith(("toy_stop", "[jit ")))
    listing = "\n".join(frame.line for frame in frames)
    inner = frames[:first]
    assert all(not frame.function.startswith("??") or "libc" in frame.line
               for frame in inner), listing
    actual = frames[first:]
    assert len(actual) == len(expected), f"expected {len(expected)} frames:\n{listing}"
    for frame, (pattern, method) in zip(actual, expected):
        assert re.match(pattern + r"(\s|$)", frame.function), f"{frame.line!r} !~ {pattern}"
        if method:
            assert f"[via {method}]" in frame.function, frame.line
        assert "guess" not in frame.function and "unwind stopped" not in frame.function, \
            frame.line


@pytest.mark.parametrize("case", list(TOYJIT_CASES))
def test_toyjit_live_unwinds_every_true_frame_to_main(agdb, case):
    """Live through qemu's stub, bt walks the toy JIT's stack exactly to main: each JIT
    frame decoded from its start (frame records, the entry shim's stp pairs, the
    frameless code's own x30 slot, a leaf's x30 still live), no guess."""
    program = [aarch64.TOYJIT, *TOYJIT_CASES[case]]
    output = aarch64.gdb_live(program, [SHOW_METHOD, "bt"], gdb=agdb)
    for pid in re.findall(r"\(process (\d+)\) killed\]", output):
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
    assert "Program received signal SIGTRAP" in output, output
    assert_exact_aarch64_backtrace(output, case)


@pytest.mark.parametrize("case", list(TOYJIT_CASES))
def test_toyjit_core_unwinds_every_true_frame_to_main(agdb, toyjit_cores, case):
    """On qemu's core (no file list, the program's code not in it), bt walks the toy
    JIT's stack exactly to main, as live."""
    output = aarch64.gdb_core(aarch64.TOYJIT, toyjit_cores[case], [SHOW_METHOD, "bt"],
                              gdb=agdb)
    assert_exact_aarch64_backtrace(output, case)


def test_cli_reads_an_aarch64_core_through_a_gdb_that_reads_aarch64(toyjit_cores):
    """``jit-unwind core`` on an aarch64 core picks gdb-multiarch by itself; --sysroot
    gives it the program's libraries; --debugger none reads the same stack (libc's
    frames named from its own symbols: not compared)."""
    core = toyjit_cores["mixed"]
    result = jit_unwind("core", core, aarch64.TOYJIT, "--sysroot", aarch64.SYSROOT)
    assert result.returncode == 1, result.stderr  # a stack, but no Python frames in it
    frames = re.findall(r"^#\d+\s+(\S+)", result.stdout, re.M)
    assert frames[frames.index("toy_stop"):] == [
        "toy_stop", "jit_callback", "[jit", "call_jit", "jit_callback", "[jit", "[jit",
        "call_jit", "jit_callback", "[jit", "call_jit", "jit_callback", "[jit", "[jit",
        "call_jit", "main"], result.stdout
    none = jit_unwind("core", core, aarch64.TOYJIT, "--sysroot", aarch64.SYSROOT,
                      "--debugger", "none")
    assert none.returncode == 1, none.stderr
    assert re.findall(r"^#\d+\s+(\S+)", none.stdout, re.M)[2:] == frames[2:], none.stdout
