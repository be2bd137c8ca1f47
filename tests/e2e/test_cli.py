"""The ``jit-unwind`` command as a user runs it (``python -m jit_unwind``, the source
tree's package first on the path): on a core of a CPython 3.14 JIT process, on a live
process, installing into ~/.gdbinit and the script ``pip install`` makes (``doctor``:
test_cli_doctor.py)."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from tests.jit_python import fixture_python
from tests.python_expect import SCRIPTS
from tests.support import GDB_BINARIES, REPO, run_gdb

CLI_TIMEOUT = 600
SYSTEM_GDB = GDB_BINARIES["gdb13"]


def jit_unwind(*args, env=None, cwd=None):
    """Run ``python -m jit_unwind ARGS``; the CompletedProcess."""
    environment = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "jit_unwind", *map(str, args)],
                          capture_output=True, text=True, errors="replace",
                          timeout=CLI_TIMEOUT, env=environment, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def assert_one_line_error(result, status, words):
    assert result.returncode == status, result
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jit-unwind: "), result.stderr
    assert all(word in lines[0] for word in words), result.stderr


@pytest.fixture(scope="module")
def jit_core(tmp_path_factory):
    """A core of CPython 3.14 with the JIT on: three threads, two of them in JIT code."""
    python = fixture_python("3.14")
    core = tmp_path_factory.mktemp("cli") / "jit.core"
    output = run_gdb(SYSTEM_GDB, ["set environment PYTHON_JIT=1", "run", f"gcore {core}"],
                     [python, SCRIPTS / "jit_scenarios.py", "threads"], plugin=False)
    assert core.exists(), output
    return python, core


def test_core_without_executable_prints_every_thread(jit_core):
    python, core = jit_core
    result = jit_unwind("core", core)
    assert result.returncode == 0, result
    assert f"executable {python}" in result.stderr
    text = result.stdout
    for thread in ('Thread 1 ', 'Thread 2 ', 'Thread 3 ', '"spinner-0"', '"spinner-1"'):
        assert thread in text, text
    assert "[py] threads (" in text and "[py] <module> (" in text, text
    assert text.count("[py] spin (") == 2, text
    assert text.count("[jit] spin (") == 2 and "[jit shim] spin (" in text, text
    assert "_PyEval_EvalFrameDefault" in text
    # GDB's own start-up chatter is not the user's stack.
    assert "Core was generated" not in text and "[New LWP" not in text


def test_a_reader_that_stops_early_gets_no_error(jit_core):
    """`jit-unwind core CORE | head -1`: the first line, and no Broken pipe message."""
    python, core = jit_core
    environment = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    command = (f"{shlex.quote(sys.executable)} -m jit_unwind core --debugger none "
               f"{shlex.quote(str(core))} {shlex.quote(str(python))} | head -1")
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True,
                            text=True, errors="replace", timeout=CLI_TIMEOUT, env=environment)
    assert result.stdout.startswith("Thread 1 "), result
    assert len(result.stdout.splitlines()) == 1, result
    assert "Broken pipe" not in result.stderr and "Traceback" not in result.stderr, result
    assert result.returncode in (0, 141), result


def test_core_through_lldb_never_hangs(jit_core):
    """`jit-unwind core --debugger lldb`: LLDB 23 once hung for good in about one run
    in two (its event thread reprinting frames through the provider while the command
    listed them); five runs in a row each finish with the stack."""
    python, core = jit_core
    environment = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    for _ in range(5):
        result = subprocess.run([sys.executable, "-m", "jit_unwind", "core", "--debugger",
                                 "lldb", str(core)], capture_output=True, text=True,
                                errors="replace", timeout=120, env=environment,
                                stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result
        text = result.stdout
        assert text.count("[jit] spin (") == 2 and "[py] <module> (" in text, text
        assert "Traceback" not in result.stderr, result.stderr


def test_core_json_parses(jit_core):
    python, core = jit_core
    result = jit_unwind("core", "--json", core, python)
    assert result.returncode == 0, result
    document = json.loads(result.stdout)
    assert document["python_version"].startswith("3.14")
    assert len(document["threads"]) == 3
    names = {frame["function"] for thread in document["threads"]
             for frame in thread["python"]}
    assert {"threads", "spin", "<module>"} <= names, names
    assert all(thread["frames"] for thread in document["threads"])


def test_core_python_only(jit_core):
    _python, core = jit_core
    result = jit_unwind("core", "--python-only", core)
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert any(line.strip().startswith("[py] spin (") for line in lines), result.stdout
    assert not any(line.startswith("#") for line in lines), result.stdout


def test_core_through_gdb18(jit_core):
    _python, core = jit_core
    result = jit_unwind("core", "--debugger", "gdb18", core)
    assert result.returncode == 0, result
    assert result.stdout.count("[jit] spin (") == 2, result.stdout


def test_gdbs_index_cache_is_where_the_readme_says_and_can_be_turned_off(jit_core, tmp_path):
    """A run with native frames leaves GDB's index of python's DWARF in
    $XDG_CACHE_HOME/gdb, named by its build ID, and prints the same stack the next time
    (the index read back); JIT_UNWIND_INDEX_CACHE=0 and --python-only (no DWARF read)
    leave nothing there."""
    python, core = jit_core
    for env, args in (({"JIT_UNWIND_INDEX_CACHE": "0"}, ()), ({}, ("--python-only",))):
        cache = tmp_path / ("off" if env else "python-only")
        result = jit_unwind("core", *args, core, python, env={"XDG_CACHE_HOME": str(cache),
                                                              **env})
        assert result.returncode == 0 and "[py] spin (" in result.stdout, result
        assert not (cache / "gdb").exists() or not list((cache / "gdb").iterdir())
    cache = tmp_path / "on"
    first = jit_unwind("core", core, python, env={"XDG_CACHE_HOME": str(cache)})
    assert first.returncode == 0 and first.stdout.count("[jit] spin (") == 2, first
    written = sorted(path.name for path in (cache / "gdb").iterdir())
    build_id = subprocess.run(["readelf", "-n", python], capture_output=True, text=True
                              ).stdout.split("Build ID: ")[1].split()[0]
    assert f"{build_id}.gdb-index" in written, written
    again = jit_unwind("core", core, python, env={"XDG_CACHE_HOME": str(cache)})
    assert again.returncode == 0 and again.stdout == first.stdout, again


def test_a_missing_core_is_a_usage_error(tmp_path):
    result = jit_unwind("core", tmp_path / "no.core")
    assert_one_line_error(result, 2, ["no.core", "not found"])
    assert result.stdout == ""


def test_a_file_that_is_no_core(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a core\n")
    assert_one_line_error(jit_unwind("core", text), 2, ["notes.txt", "not", "core file"])


def test_a_missing_executable_is_a_usage_error(jit_core, tmp_path):
    _python, core = jit_core
    assert_one_line_error(jit_unwind("core", core, tmp_path / "python"), 2,
                          ["executable", "not found"])


def test_install_gdb_then_plain_gdb_has_the_command(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    for _ in range(2):
        result = jit_unwind("install", "--gdb", env=env)
        assert result.returncode == 0, result
    lines = (home / ".gdbinit").read_text().splitlines()
    assert len(lines) == 1 and lines[0].endswith("jit_unwind/loaders/gdb_init.py"), lines
    assert not (home / ".lldbinit").exists()
    # Debian's GDB with its own Python 3.11, from a directory with no plugin in sight.
    helped = subprocess.run([str(SYSTEM_GDB), "-batch", "-ex", "help py-mixed-bt"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env=dict(os.environ, HOME=str(home)), stdin=subprocess.DEVNULL)
    assert "Print the mixed native and Python stack" in helped.stdout, helped
    assert "Traceback" not in helped.stderr, helped.stderr

    result = jit_unwind("install", "--gdb", "--uninstall", env=env)
    assert result.returncode == 0, result
    assert (home / ".gdbinit").read_text() == ""


def test_install_keeps_the_users_own_lines(tmp_path):
    (tmp_path / ".gdbinit").write_text("set history save on\n")
    env = {"HOME": str(tmp_path)}
    assert jit_unwind("install", "--gdb", env=env).returncode == 0
    assert jit_unwind("install", "--gdb", "--uninstall", env=env).returncode == 0
    assert (tmp_path / ".gdbinit").read_text() == "set history save on\n"


@pytest.fixture
def sleeping_python():
    """A live CPython 3.14 sleeping in a Python function; its process."""
    script = ("import sys, time\n"
              "def nap():\n"
              "    print('ready', flush=True)\n"
              "    time.sleep(300)\n"
              "nap()\n")
    process = subprocess.Popen([str(fixture_python("3.14")), "-c", script],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # from print to time.sleep
        yield process
    finally:
        process.kill()
        process.wait()


def test_attach_shows_the_python_frames_and_leaves_the_process_running(sleeping_python):
    result = jit_unwind("attach", sleeping_python.pid)
    assert result.returncode == 0, result
    assert "[py] nap (<string>:4)" in result.stdout, result.stdout
    assert "[py] <module> (<string>:5)" in result.stdout
    assert "time_sleep" in result.stdout
    assert "detached" not in result.stdout
    assert sleeping_python.poll() is None  # detached, not killed

    python_only = jit_unwind("attach", "--python-only", sleeping_python.pid)
    assert python_only.returncode == 0, python_only
    assert "[py] nap (<string>:4)" in python_only.stdout
    assert "time_sleep" not in python_only.stdout


def test_attach_to_no_process():
    assert_one_line_error(jit_unwind("attach", "0"), 2, ["no process"])


def test_usage_errors_exit_2():
    result = jit_unwind("core")
    assert result.returncode == 2 and "usage: jit-unwind core" in result.stderr
    helped = jit_unwind("--help")
    assert helped.returncode == 0 and "exit status" in helped.stdout


def test_pip_install_gives_the_jit_unwind_script(tmp_path):
    """``pip install .`` into a fresh venv (offline: no build isolation, no index) puts
    ``jit-unwind`` in its bin/.  The tree is copied first: a build writes into it."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "plugin", source / "plugin",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = tmp_path / "venv"
    python311 = shutil.which("python3.11", path="/usr/bin") or "/usr/bin/python3"
    subprocess.run([python311, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=300)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation", "--no-deps",
         "--no-index", str(source)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    script = venv / "bin" / "jit-unwind"
    assert script.exists()
    helped = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    assert helped.returncode == 0, helped
    for command in ("core", "attach", "install", "doctor", "gdb", "lldb"):
        assert command in helped.stdout


def test_gdb_subcommand_starts_gdb_with_the_plugin(tmp_path):
    """``jit-unwind gdb -- PROGRAM``: an interactive GDB (here reading its commands from
    stdin) that knows py-mixed-bt and holds the program."""
    environment = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    result = subprocess.run([sys.executable, "-m", "jit_unwind", "gdb", "--", "/bin/true"],
                            input="help py-mixed-bt\ninfo files\n", capture_output=True,
                            text=True, timeout=120, env=environment, cwd=tmp_path)
    assert result.returncode == 0, result
    assert "Print the mixed native and Python stack" in result.stdout, result.stdout
    assert "/bin/true" in result.stdout
