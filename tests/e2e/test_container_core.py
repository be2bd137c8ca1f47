"""A container's core read on the host with ``--sysroot`` (issue 35, item 3): Debian 13's
own python3.13 (stripped, LTO/PGO, glibc 2.41: another build of every file than this
Debian 12 machine's) run in a root directory of its own, in its own pid namespace,
with ``-X perf``, dumped by the kernel at a SIGTRAP seven Python functions deep
(tests/fixtures/debian13_core.sh, ``make fixtures``).

Read through each GDB and with no debugger, as a user would: ``jit-unwind core
--sysroot ROOT CORE ROOT/usr/bin/python3.13``.  Every file comes from under ROOT: the
interpreter (its ``_PyRuntime`` in .dynsym and .PyRuntime: the Python frames), libc
(its CFI: the walk to ``_start``; never this machine's libc or its debug file, which
named frame 0 ``__GI___qsort_r``), the perf map (ROOT/tmp/perf-PID.map with the pid
the core holds, the container's), or the jitdump (a second core, ``-X perf_jit``:
ROOT/tmp/jit-PID.dump, which the process maps)."""

import json

import pytest

from tests.e2e.test_cli import jit_unwind
from tests.jit_python import CACHE
from tests.python_expect import SCRIPTS, marks

FIXTURE = CACHE / "debian13-python3.13"
ROOT = FIXTURE / "root"
CORE = FIXTURE / "python.core"  # -X perf: ROOT/tmp/perf-PID.map
# Each core, and the file of its root that names its trampolines.
CORES = {"perf-map": ("python.core", "perf-{}.map"), "jitdump": ("perf-jit.core", "jit-{}.dump")}
PYTHON = ROOT / "usr" / "bin" / "python3.13"
SCRIPT = SCRIPTS / "seven_deep.py"
FUNCTIONS = ["f7", "f6", "f5", "f4", "f3", "f2", "f1", "<module>"]
DEBUGGERS = ["none", "gdb", "gdb18"]


def read(debugger, *form, core=CORE, root=ROOT):
    assert core.exists() and root.exists(), \
        f"{core} or {root} is missing: run tests/fixtures/debian13_core.sh (make fixtures does)"
    result = jit_unwind("core", "--debugger", debugger, "--sysroot", root, *form, core,
                        root / "usr" / "bin" / "python3.13")
    assert result.returncode == 0, result
    assert "Traceback" not in result.stderr, result.stderr
    assert "_PyRuntime" not in result.stderr, result.stderr
    assert "warning" not in result.stderr, result.stderr  # every file the core's build
    return result.stdout


@pytest.fixture(scope="module", params=list(CORES))
def container_core(request):
    """(the core, the name of its trampolines' file, what the reader with no debugger
    prints: text and JSON)."""
    name, names_file = CORES[request.param]
    core = FIXTURE / name
    return core, names_file, read("none", core=core), json.loads(read("none", "--json",
                                                                      core=core))


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_container_core_through_each_reader(debugger, container_core):
    core, names_file, expected_text, expected_document = container_core
    text = read(debugger, core=core)
    document = json.loads(read(debugger, "--json", core=core))
    (thread,) = document["threads"]
    pid = thread["lwp"]
    # The Python frames, each with its line, the pid being the container's.
    assert [(f["function"], f["file"]) for f in thread["python"]] == [
        (name, "/tmp/seven_deep.py") for name in FUNCTIONS], text
    assert thread["python"][0]["line"] == marks(SCRIPT)["f7"], text
    assert (ROOT / "tmp" / names_file.format(pid)).exists(), "the core's pid names it"
    frames = thread["frames"]
    # Frame 0 is libc's kill: named by the container's libc, never by this machine's
    # libc or debug file (another build).
    assert frames[0]["function"] == "kill", text
    assert not any(" at " in line for line in text.splitlines()), text
    # The trampolines, one per Python function, interleaved in order: named by the
    # root's perf map, or by its jitdump (that core's pid has no perf map).
    trampolines = [f["function"] for f in frames if f["function"].startswith("py::")]
    assert trampolines == [f"py::{name}:/tmp/seven_deep.py" for name in FUNCTIONS], text
    # The native walk reaches _start through the container's libc.
    assert frames[-1]["function"] == "_start", text
    assert "__libc_start_main" in [f["function"] for f in frames], text
    libraries = {f["library"] for f in frames if f.get("library")}
    assert libraries and all(path.startswith(f"{ROOT}/") for path in libraries), libraries
    # Every reader prints the same.
    assert text == expected_text
    assert document == expected_document


def test_without_the_sysroot_the_other_builds_are_named():
    """Read as if its files were this machine's (no --sysroot), the core's libraries are
    this machine's other builds: a one-line warning names them (build IDs in the core
    and here) and says to give the root with --sysroot; never a traceback."""
    for debugger in DEBUGGERS:
        result = jit_unwind("core", "--debugger", debugger, CORE, PYTHON)
        assert "Traceback" not in result.stderr, result.stderr
        (warning,) = [line for line in result.stderr.splitlines() if "warning" in line]
        assert warning.startswith("jit-unwind: warning: the core's files are other builds "
                                  "here: "), warning
        assert "/libc.so.6 (build ID " in warning and warning.endswith(
            "with --sysroot"), warning


def test_the_sysroots_debug_files_by_build_id():
    """With its libc's debug package installed in the root (root-dbg), every reader
    names libc's frames from that debug file, found by build ID under the sysroot as
    GDB finds it: frame 0 is __GI_kill with its line, the walk through
    __libc_start_call_main, all the same text."""
    root = FIXTURE / "root-dbg"
    texts = {debugger: read(debugger, root=root) for debugger in DEBUGGERS}
    text = texts["none"]
    lines = text.splitlines()
    assert lines[1] == "#0   __GI_kill at sysdeps/unix/syscall-template.S:120", text
    assert any(line.endswith(" __libc_start_call_main at "
                             "sysdeps/nptl/libc_start_call_main.h:58") for line in lines), text
    assert lines[-1].endswith(" _start"), text
    assert text.count("[py] ") == len(FUNCTIONS), text
    assert texts["gdb"] == text and texts["gdb18"] == text
