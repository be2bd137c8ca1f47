"""``jit-unwind doctor`` as a user runs it: the debuggers and their Pythons, the init
files, the perf maps and jitdumps where the plugin looks for them (/tmp, the current
directory, ~/.debug/jit), each problem with its fix, exit status 1 when it found one.
HOME (and PATH, where the test is about a missing debugger) point at temporary
directories; the perf maps are real files in /tmp, named by real pids."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_cli import jit_unwind
from tests.support import REPO

# Other test runs share this machine's two cores; doctor alone takes about 0.4 s.
LOAD_FACTOR = 2 if os.getloadavg()[0] > 2 else 1


def doctor(tmp_path, env=None, cwd=None):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    result = jit_unwind("doctor", env={"HOME": str(home), **(env or {})},
                        cwd=cwd or tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    # The exit status says whether the report holds a problem, and each has its fix.
    problems = result.stdout.count("\n    fix: ")
    assert result.returncode == (1 if problems else 0), result
    assert result.stdout.rstrip().endswith(
        f"{problems} problem(s)" if problems else "no problems"), result.stdout
    return result


@pytest.fixture
def sleeper():
    process = subprocess.Popen(["sleep", "300"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def dead_pid():
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.fixture
def made_files():
    """Files the test creates in /tmp, removed afterwards."""
    paths = []
    yield paths
    for path in paths:
        Path(path).unlink(missing_ok=True)


def perf_map(pid, made_files):
    path = Path(f"/tmp/perf-{pid}.map")
    assert not path.exists()
    path.write_text("7f0000001000 40 toy::jit_fp\n")
    made_files.append(path)
    return path


def test_doctor_names_each_debugger_and_its_python(tmp_path):
    result = doctor(tmp_path)
    text = result.stdout
    assert f"gdb: {shutil.which('gdb')}, Python 3.11" in text, text
    assert "gdb18 (gdb-for-pwndbg beside this Python): " in text
    for line in ("  pyelftools: ok", "  tabulate: ok"):
        assert line in text
    assert "ptrace: allowed" in text


@pytest.mark.skipif(not shutil.which("lldb-19"), reason="Debian's lldb-19 is not installed")
def test_doctor_names_the_python_lldb_19_embeds_in_an_activated_venv(tmp_path):
    """lldb-19 embeds Debian's libpython: in an activated virtual environment its
    Python took the venv for its prefix (through the venv's python3, first on PATH).
    doctor names the system Python, as lldb-19 run outside the venv does, and the
    venv's python3 is still the one PATH finds for the user's programs."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    system = subprocess.run(["/usr/bin/python3", "-c", "import sys; "
                             "print(sys.version.split()[0], sys.prefix)"],
                            capture_output=True, text=True, check=True).stdout.split()
    own = subprocess.run(["lldb-19", "--no-lldbinit", "-b", "-o", "script import sys; "
                          "print('embeds', sys.version.split()[0])"], capture_output=True,
                         text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert f"embeds {system[0]}" in own.stdout, own
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "VIRTUAL_ENV": str(venv)}
    result = doctor(tmp_path, env=env)
    line = next(line for line in result.stdout.splitlines() if line.startswith("lldb-19: "))
    assert line == f"lldb-19: {shutil.which('lldb-19')}, Python {system[0]} ({system[1]})", \
        result.stdout


def test_doctor_lists_perf_maps_of_running_and_exited_processes(
        tmp_path, sleeper, dead_pid, made_files):
    running = perf_map(sleeper, made_files)
    exited = perf_map(dead_pid, made_files)
    text = doctor(tmp_path).stdout
    lines = text.splitlines()
    running_line = next(line for line in lines if line.startswith(f"  {running}  "))
    assert f"pid {sleeper} running" in running_line, running_line
    assert "28 B, written 0 min ago" in running_line
    exited_line = next(line for line in lines if line.startswith(f"  {exited}  "))
    assert f"pid {dead_pid} exited" in exited_line, exited_line


def test_a_perf_map_older_than_its_process_is_a_problem(tmp_path, sleeper, made_files):
    """An earlier process with the same pid left it: the plugin ignores it."""
    path = perf_map(sleeper, made_files)
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert f"{path}: left by an earlier process with pid {sleeper}" in result.stdout
    assert f"    fix: rm {path}\n" in result.stdout


def test_jitdumps_in_the_current_directory_and_under_debug_jit(tmp_path, sleeper):
    """Where V8 (the working directory) and perf inject (~/.debug/jit) put them."""
    work = tmp_path / "work"
    work.mkdir()
    (work / f"jit-{sleeper}.dump").write_bytes(b"JiTD")
    copies = tmp_path / "home" / ".debug" / "jit" / "java-jit-20261125.XXab12cd"
    copies.mkdir(parents=True)
    (copies / f"jit-{sleeper}.dump").write_bytes(b"DTiJ" * 4)
    text = doctor(tmp_path, cwd=work).stdout
    for path, size in ((work / f"jit-{sleeper}.dump", "4 B"),
                       (copies / f"jit-{sleeper}.dump", "16 B")):
        assert f"  {path}  {size}, written 0 min ago, pid {sleeper} running" in text, text


def test_an_init_line_whose_loader_is_gone_is_a_problem(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gdbinit").write_text("set history save on\n"
                                   "source /gone/site-packages/jit_unwind/loaders/gdb_init.py\n")
    result = doctor(tmp_path)
    assert result.returncode == 1
    assert (f"{home}/.gdbinit: loads /gone/site-packages/jit_unwind/loaders/gdb_init.py, "
            "which does not exist") in result.stdout
    assert "    fix: jit-unwind install --gdb\n" in result.stdout
    # The fix fixes it.
    assert jit_unwind("install", "--gdb", env={"HOME": str(home)}).returncode == 0
    fixed = doctor(tmp_path).stdout
    assert f"{home}/.gdbinit: loads jit-unwind: source " in fixed, fixed
    assert "/gone/" not in fixed
    assert f"{home}/.lldbinit: does not load jit-unwind" in fixed
    assert "jit-unwind install --lldb)" in fixed


def test_a_source_trees_init_line_is_recognised(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gdbinit").write_text(f"source {REPO}/gdb_init.py\n")
    (home / ".lldbinit").write_text("command script import /old/jit-unwind/lldb_init.py\n")
    result = doctor(tmp_path)
    assert f"{home}/.gdbinit: loads jit-unwind: source {REPO}/gdb_init.py" in result.stdout
    assert (f"    fix: delete that line from {home}/.lldbinit, then jit-unwind install "
            "--lldb\n") in result.stdout
    assert result.returncode == 1


def test_no_gdb_on_path_is_a_problem_with_its_fix(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    result = doctor(tmp_path, env={"PATH": str(empty)})
    assert result.returncode == 1
    assert result.stdout.startswith("gdb: not found (the debugger every subcommand runs "
                                    "by default)\n    fix: apt-get install gdb\n"), result.stdout
    assert "lldb-19: not found (optional; to add it: apt-get install lldb-19" in result.stdout
    # The venv's own debuggers are still found beside its Python.
    assert "gdb18 (gdb-for-pwndbg beside this Python): " in result.stdout


def test_doctor_is_fast(tmp_path):
    started = time.monotonic()
    doctor(tmp_path)
    assert time.monotonic() - started < 2.0 * LOAD_FACTOR


def test_doctor_says_whether_a_live_read_without_a_debugger_works(tmp_path):
    """Tried on a child process: ptrace, the registers, process_vm_readv; then whom it
    may read.  Root here holds CAP_SYS_PTRACE; without it (a container's root, made by
    setpriv's bounding set) it reads only processes holding no capability it lacks."""
    said = "live read without a debugger (attach --debugger none): ptrace and " \
           "process_vm_readv work; it may read "
    assert said + "any process (CAP_SYS_PTRACE)\n" in doctor(tmp_path).stdout
    limited = subprocess.run(
        ["setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace", sys.executable,
         "-m", "jit_unwind", "doctor"], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO / "plugin"), HOME=str(tmp_path)),
        stdin=subprocess.DEVNULL)
    assert (said + "processes holding no capability it lacks (root without "
            "CAP_SYS_PTRACE)\n") in limited.stdout, limited
    assert "ptrace: root without CAP_SYS_PTRACE" in limited.stdout, limited
