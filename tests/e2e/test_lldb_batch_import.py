"""LLDB's own driver in batch mode, the plugin imported after the core is loaded:
`lldb -b -c CORE PROGRAM -o 'command script import …/lldb_init.py' -o 'bt all'`.

Adding the frame provider makes LLDB's event thread reprint every thread's frame 0
through it while the next command lists frames on the main thread; LLDB 23 took its
locks in opposite orders there and hung in every such run.  (The suite's other LLDB
tests drive LLDB through its Python API, which has no event thread.)"""

import subprocess

import pytest

from tests.e2e.test_cli import jit_core  # noqa: F401  (a 3.14 JIT core, three threads)
from tests.lldb_driver import LLDB_INIT
from tests.support import REPO

LLDB = REPO / ".venv" / "bin" / "lldb"


@pytest.mark.parametrize("command", ["bt all", "py-mixed-bt --all-threads"])
def test_import_after_the_core_then_a_command(jit_core, command):  # noqa: F811
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
