"""LLDB's own driver in batch mode, the plugin imported after the core is loaded:
`lldb -b -c CORE PROGRAM -o 'command script import …/lldb_init.py' -o 'bt all'`.

Adding the frame provider makes LLDB's event thread reprint every thread's frame 0
through it while the next command lists frames on the main thread; LLDB 23 took its
locks in opposite orders there and hung in every such run.  (The suite's other LLDB
tests drive LLDB through its Python API, which has no event thread.)"""

import subprocess

import pytest

from tests.jit_python import fixture_python
from tests.lldb_driver import LLDB_INIT
from tests.python_expect import SCRIPTS
from tests.support import GDB_BINARIES, REPO, run_gdb

LLDB = REPO / ".venv" / "bin" / "lldb"


@pytest.fixture(scope="module")
def jit_core(tmp_path_factory):
    python = fixture_python("3.14")
    core = tmp_path_factory.mktemp("batch") / "jit.core"
    output = run_gdb(GDB_BINARIES["gdb13"], ["set environment PYTHON_JIT=1", "run",
                                             f"gcore {core}"],
                     [python, SCRIPTS / "jit_scenarios.py", "threads"], plugin=False)
    assert core.exists(), output
    return python, core


@pytest.mark.parametrize("command", ["bt all", "py-mixed-bt --all-threads"])
def test_import_after_the_core_then_a_command(jit_core, command):
    python, core = jit_core
    for _ in range(3):
        result = subprocess.run(
            [str(LLDB), "-b", "--no-lldbinit", "--no-use-colors", "-c", str(core), str(python),
             "-o", f"command script import {LLDB_INIT}", "-o", command],
            capture_output=True, text=True, errors="replace", timeout=120,
            stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result
        after = result.stdout.split(f"(lldb) {command}", 1)[-1]
        assert after.count("[jit] spin (") == 2, result.stdout
        assert "Traceback" not in result.stdout + result.stderr, result
