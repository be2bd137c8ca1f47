"""CPython 3.14 with the JIT, cross-built for aarch64 (tests/fixtures/build_cpython_aarch64.sh),
under qemu-user: on qemu's cores (no file list) in gdb-multiarch, GDB 18 and LLDB 23, and
live through qemu 10's stub.

The same expectations as on x86-64 (tests/scenario_expect.py): with ``PYTHON_JIT=1``
the trace that called into C is named after its code object, the Python frames it runs
sit under it, its entry shim (callee-saved registers stored in ``stp`` pairs) follows,
then the eval loop, and the walk reaches ``_start``; with ``-X perf`` every Python call
goes through a trampoline (a frame record, x29/x30) named ``py::f:file``.
"""

import json
import re
import time

import pytest

from tests import aarch64
from tests.driver import MIXED_JSON
from tests.e2e.test_cli import assert_one_line_error, jit_unwind
from tests.jit_python import aarch64_python
from tests.lldb_driver import run_lldb
from tests.python_expect import RECURSE
from tests.scenario_expect import JIT_SCRIPT, check_cpython_jit, check_recursion
from tests.support import (assert_no_python_failure, parse_backtrace, remove_process_files,
                           session_output)

DEPTH = 3


@pytest.fixture(scope="session")
def python314():
    aarch64.ensure_fixtures()
    return aarch64_python("3.14")


@pytest.fixture(scope="module")
def cores(python314, tmp_path_factory):
    """A qemu core of the JIT's ``kill`` scenario and one of -X perf recursion."""
    directory = tmp_path_factory.mktemp("aarch64-cpython")
    started = time.time()
    made = {
        "jit": aarch64.run_to_core(["-E", "PYTHON_JIT=1", python314, JIT_SCRIPT, "kill"],
                                   directory),
        "perf": aarch64.run_to_core([python314, "-X", "perf", RECURSE, str(DEPTH)],
                                    directory),
    }
    window = session_output("", started)  # the perf map was written by then
    yield made
    # By now the pid may be another test's process: only the map written above goes.
    remove_process_files([aarch64.core_pid(core) for core in made.values()], window,
                         ("perf-{}.map",))
    for core in made.values():
        core.unlink(missing_ok=True)


def document_of(output: str) -> dict:
    """The JSON document of ``py-mixed-bt --json`` in a debugger's output."""
    found = re.search(r"^\{$", output, re.M)
    assert found, output
    return json.JSONDecoder().raw_decode(output[found.start():])[0]


@pytest.mark.parametrize("gdb", sorted(aarch64.GDBS))
def test_jit_core(gdb, python314, cores):
    output = aarch64.gdb_core(python314, cores["jit"],
                              ["set jit-unwind show-method on", "bt", MIXED_JSON],
                              gdb=aarch64.GDBS[gdb])
    assert_no_python_failure(output)
    check_cpython_jit(document_of(output), "kill")
    names = [frame.function for frame in parse_backtrace(output)]
    trace = next(index for index, name in enumerate(names) if name.startswith("[jit] hot"))
    assert "[via entry-record]" in names[trace], output  # the shim's return slot
    assert names[trace + 1].startswith("[jit shim] hot") and "[via prologue]" in names[trace + 1]
    assert names[trace + 2].startswith("_PyEval_EvalFrameDefault"), output
    # The Python frames the trace runs are under it in bt too.
    assert re.search(r"trace 0x[0-9a-f]+ \[via entry-record\] \(\)\n    \[py\] leaf \(\) at "
                     + re.escape(str(JIT_SCRIPT)) + r":\d+\n    \[py\] hot \(\)", output), output
    assert names[-1] == "_start", output


@pytest.mark.parametrize("gdb", sorted(aarch64.GDBS))
def test_perf_trampolines_core(gdb, python314, cores):
    output = aarch64.gdb_core(python314, cores["perf"],
                              ["set jit-unwind show-method on", "bt", MIXED_JSON],
                              gdb=aarch64.GDBS[gdb])
    assert_no_python_failure(output)
    check_recursion(document_of(output), DEPTH, perf=True)
    names = [frame.function for frame in parse_backtrace(output)]
    trampolines = [name for name in names if name.startswith("py::")]
    assert len(trampolines) == DEPTH + 2, output  # <module>, recurse x (DEPTH + 1)
    assert all("[via prologue]" in name for name in trampolines), output


def test_jit_core_in_lldb(python314, cores):
    """LLDB 23 on the same core: its own unwinding stops at the trace; the shared walk
    goes on through the shim to _start, the Python frames interleaved."""
    output = run_lldb([f"platform select --sysroot {aarch64.SYSROOT} remote-linux",
                       f"target create {python314} --core {cores['jit']}", "bt", MIXED_JSON])
    check_cpython_jit(document_of(output), "kill")
    assert re.search(r"\[jit\] hot \(.*\) trace 0x[0-9a-f]+ .*\n.*\[py\] leaf", output), output


def test_jit_live(python314):
    """Live through qemu 10's stub (which serves the memory map), GDB 18."""
    output = aarch64.gdb_live([python314, JIT_SCRIPT, "kill"], [MIXED_JSON],
                              gdb=aarch64.GDBS["gdb18"], qemu_options=["-E", "PYTHON_JIT=1"])
    assert_no_python_failure(output)
    check_cpython_jit(document_of(output), "kill")


@pytest.mark.parametrize("debugger", ["none", "lldb"])
@pytest.mark.parametrize("case", ["jit", "perf"])
def test_cores_through_the_cli(python314, cores, case, debugger, tmp_path):
    """``jit-unwind core --sysroot`` on the same cores, without a debugger and through
    LLDB 23 (``--sysroot`` is its Linux platform's, LLDB having no target.sysroot): the
    same document.  Nothing is left in the temporary directory: LLDB would not load the
    JIT symbol file of an aarch64 core, and exits without running atexit handlers."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    result = jit_unwind("core", cores[case], python314, "--sysroot", aarch64.SYSROOT,
                        "--debugger", debugger, "--json", env={"TMPDIR": str(temporary)})
    assert result.returncode == 0, result.stderr
    assert list(temporary.iterdir()) == []
    document = json.loads(result.stdout)
    if case == "jit":
        check_cpython_jit(document, "kill")
    else:
        check_recursion(document, DEPTH, perf=True)


@pytest.mark.parametrize("debugger", ["none", "lldb"])
def test_the_cli_refuses_another_program_for_a_qemu_core(python314, cores, debugger):
    """A qemu core has no file list and none of the program's code: the auxv's entry
    point, from the program headers, tells another aarch64 program (the sysroot's
    python3.11), and an x86-64 file is told by its machine (issue 34, item 4)."""
    other = aarch64.PYTHON311
    result = jit_unwind("core", cores["jit"], other, "--sysroot", aarch64.SYSROOT,
                        "--debugger", debugger)
    assert_one_line_error(result, 2, [f"{other} is not the program", str(python314),
                                      "its entry point is not where the core's auxiliary "
                                      "vector has it", "--force"])
    result = jit_unwind("core", cores["jit"], "/bin/ls", "--debugger", debugger)
    assert_one_line_error(result, 2, ["/bin/ls is not the program",
                                      "it is an x86-64 file, the core an aarch64 process's"])
