"""``jit-unwind install --lldb``, then a plain LLDB (no option, HOME a temporary
directory, started elsewhere than the source tree) has the plugin: LLDB 23's ``bt``
goes through the toy JIT's frames and ``py-mixed-bt`` exists, as in lldb-19;
``--uninstall`` takes the lines out of both init files.  (``--gdb``: test_cli.py.)"""

import os
import subprocess
import time

import pytest

from tests.driver import LLDB19
from tests.e2e.test_cli import jit_unwind
from tests.support import REPO, remove_launched, session_output

LLDB23 = REPO / ".venv" / "bin" / "lldb"
TOYJIT = REPO / "build" / "toyjit"


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


def plain_lldb(lldb, home, cwd, commands, program=()):
    """LLDB as a user starts it: its init file read, commands given with -o."""
    argv = [str(lldb), "-b"]
    for command in commands:
        argv += ["-o", command]
    if program:
        argv += ["--", *map(str, program)]
    env = dict(os.environ, HOME=str(home))
    for name in ("PYTHONHOME", "PYTHONPATH"):  # as in a user's shell
        env.pop(name, None)
    return subprocess.run(argv, capture_output=True, text=True, errors="replace", cwd=cwd,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)


def test_install_lldb_then_plain_lldb_unwinds_jit_frames(home, tmp_path):
    for _ in range(2):
        result = jit_unwind("install", "--lldb", env={"HOME": str(home)})
        assert result.returncode == 0, result
    lines = (home / ".lldbinit").read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("command script import "), lines
    assert lines[0].endswith("jit_unwind/loaders/lldb_init.py"), lines
    assert not (home / ".gdbinit").exists()

    started = time.time()
    result = plain_lldb(LLDB23, home, tmp_path,
                        ["b toy_stop", "run", "bt", "py-mixed-bt"],
                        [TOYJIT, "mixed", "1", "breakpoint", "--perf-map"])
    remove_launched(session_output(result.stdout, started))
    assert "Traceback" not in result.stdout + result.stderr, result
    bt = result.stdout.split("(lldb) bt\n")[1].split("(lldb) py-mixed-bt\n")[0]
    for name in ("toy::jit_fp", "toy::jit_frameless", "toy::enter_trampoline",
                 "toyjit`main("):
        assert name in bt, bt
    mixed = result.stdout.split("(lldb) py-mixed-bt\n")[1]
    assert "#5   toy::jit_frameless" in mixed and "#8   main at " in mixed, mixed


def test_lldb19_loads_the_installed_line_too(home, tmp_path):
    assert jit_unwind("install", "--lldb", env={"HOME": str(home)}).returncode == 0
    result = plain_lldb(LLDB19, home, tmp_path, ["help py-mixed-bt", "jit-unwind"])
    assert "Usage: py-mixed-bt [--all-threads]" in result.stdout, result
    assert "show-method" in result.stdout.split("(lldb) jit-unwind\n")[1], result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_uninstall_removes_the_line_from_both_files(home):
    (home / ".lldbinit").write_text("settings set target.x86-disassembly-flavor intel\n")
    env = {"HOME": str(home)}
    installed = jit_unwind("install", env=env)  # neither option: both files
    assert installed.returncode == 0, installed
    assert "lldb_init.py" in (home / ".lldbinit").read_text()
    assert "gdb_init.py" in (home / ".gdbinit").read_text()

    removed = jit_unwind("install", "--uninstall", env=env)
    assert removed.returncode == 0, removed
    assert f"{home}/.gdbinit: jit-unwind line removed" in removed.stdout
    assert f"{home}/.lldbinit: jit-unwind line removed" in removed.stdout
    assert (home / ".gdbinit").read_text() == ""
    assert (home / ".lldbinit").read_text() == "settings set target.x86-disassembly-flavor intel\n"
    again = jit_unwind("install", "--uninstall", env=env)
    assert again.returncode == 0
    assert f"{home}/.lldbinit: no jit-unwind line" in again.stdout
