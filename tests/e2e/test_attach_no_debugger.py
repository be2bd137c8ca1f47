"""``jit-unwind attach --debugger none PID``: a live process read with no debugger
prints what ``jit-unwind core --debugger none`` prints for a gcore of the same stop,
text and JSON, addresses and all.

The same stop: each program stops itself with SIGSTOP where it would trap into a
debugger (``stop_instead_of_trap.py`` for the Python scripts, a ``--require``d script
for node, the toy JIT's ``sigstop``), GDB writes its gcore and detaches (the process
stays stopped), then the reader reads it, twice (text, JSON), and leaves it stopped
too.  Each test also checks what a user wants to see in that stop (JIT traces and
shims, Python frames, every thread, perf-map names), so that "equal" is not two empty
stacks."""

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from tests.e2e.test_cli import assert_one_line_error, jit_unwind
from tests.e2e.test_node import FLAGS as NODE_FLAGS
from tests.e2e.test_node import NODE, RUNTIMES
from tests.jit_python import fixture_python
from tests.python_expect import SCRIPTS
from tests.support import (GDB_BINARIES, REPO, fixture_binary, pyenv_python,
                           remove_process_files)

STOP_INSTEAD_OF_TRAP = SCRIPTS / "stop_instead_of_trap.py"
STOP_TIMEOUT = 120  # s for a program to reach its stop (a JIT's warm-up, a loaded machine)


def thread_states(pid):
    """The state letter of each thread of ``pid`` ("T" group stop, "t" a tracer's stop)."""
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as handle:
                states.append(handle.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            pass
    return states


@contextmanager
def self_stopped(argv, env=None):
    """``argv`` started, and waited for until it has stopped itself; killed at the end,
    its perf map and jitdump removed."""
    process = subprocess.Popen([str(arg) for arg in argv], env=dict(os.environ, **(env or {})),
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STOP_TIMEOUT
        while set(thread_states(process.pid)) != {"T"}:
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, f"{argv} never stopped itself"
            time.sleep(0.05)
        yield process
    finally:
        process.kill()
        process.wait()
        process.stderr.close()
        remove_process_files([process.pid])


def gcore(pid, core):
    result = subprocess.run([str(GDB_BINARIES["gdb13"]), "-nx", "-q", "-batch", "-iex",
                             "set debuginfod enabled off", "-p", str(pid), "-ex",
                             f"gcore {core}"], capture_output=True, text=True,
                            errors="replace", timeout=300, stdin=subprocess.DEVNULL)
    assert core.exists(), result.stdout + result.stderr


def same_stop(process, tmp_path, status=0):
    """(live text, live JSON document) of the stopped ``process``, checked equal to the
    core reader's on its gcore; the process left stopped by both.  ``status``: 1 for a
    program without Python ("no Python frames found", said by both)."""
    core = tmp_path / "stop.core"
    gcore(process.pid, core)
    assert set(thread_states(process.pid)) == {"T"}
    printed = {}
    for form in ([], ["--json"]):
        live = jit_unwind("attach", "--debugger", "none", *form, process.pid)
        assert live.returncode == status, live
        assert "Traceback" not in live.stderr, live.stderr
        assert set(thread_states(process.pid)) == {"T"}, "the reader let the process go on"
        from_core = jit_unwind("core", "--debugger", "none", *form, core)
        assert from_core.returncode == status, from_core
        assert live.stdout == from_core.stdout, (
            f"attach{form}:\n{live.stdout}\ncore{form}:\n{from_core.stdout}")
        printed["json" if form else "text"] = live.stdout
    return printed["text"], json.loads(printed["json"])


def frames_of(document, kind=None):
    return [frame for thread in document["threads"] for frame in thread["frames"]
            if kind is None or frame["kind"] == kind]


def test_cpython_314_jit_threads(tmp_path):
    """Three threads, two of them in JIT code: traces, shims and Python frames."""
    argv = [fixture_python("3.14"), STOP_INSTEAD_OF_TRAP, SCRIPTS / "jit_scenarios.py",
            "threads"]
    with self_stopped(argv, {"PYTHON_JIT": "1"}) as process:
        text, document = same_stop(process, tmp_path)
    threads = document["threads"]
    assert len(threads) == 3, text
    assert [thread["lwp"] for thread in threads][0] == process.pid, text
    in_jit = [thread for thread in threads
              if any(f["kind"] == "jit" and " trace 0x" in f["function"]
                     for f in thread["frames"])]
    assert len(in_jit) >= 2, text
    assert any(f["function"].startswith("[jit shim] spin (") for f in frames_of(document)), text
    assert all(thread["python"] for thread in threads), text
    assert "[py] spin (" in text and "[py] threads (" in text, text
    assert frames_of(document)[-1]["function"] in ("_start", "clone3"), text


def test_free_threaded_314t(tmp_path):
    argv = [fixture_python("3.14t"), STOP_INSTEAD_OF_TRAP, SCRIPTS / "jit_scenarios.py",
            "threads"]
    with self_stopped(argv) as process:
        text, document = same_stop(process, tmp_path)
    assert len(document["threads"]) == 3, text
    assert all(thread["python"] for thread in document["threads"]), text
    assert text.count("[py] spin (") == 2, text


def test_cpython_312_perf_trampolines(tmp_path):
    script = SCRIPTS / "recurse_sigtrap.py"
    argv = [pyenv_python("3.12.1"), "-X", "perf", STOP_INSTEAD_OF_TRAP, script, "4"]
    with self_stopped(argv) as process:
        text, document = same_stop(process, tmp_path)
    names = [frame["function"] for frame in frames_of(document)]
    assert names.count(f"py::recurse:{script}") == 5, text  # depth 4, then the stop's
    assert names[-1] == "_start", text
    assert text.count("[py] recurse (") == 5, text


def test_toy_jit(tmp_path):
    argv = [fixture_binary("toyjit"), "mixed", "3", "sigstop", "--perf-map"]
    with self_stopped(argv) as process:
        text, document = same_stop(process, tmp_path, status=1)
    jit = frames_of(document, "jit")
    assert [f["function"] for f in jit] == ["toy::jit_fp", "toy::jit_frameless",
                                            "toy::enter_trampoline"] * 2, text
    assert frames_of(document)[-1]["function"] == "main", text


def test_node(tmp_path):
    argv = [NODE, *NODE_FLAGS, "--require", RUNTIMES / "stop_instead_of_trap.js",
            RUNTIMES / "node_hot.js"]
    with self_stopped(argv) as process:
        text, document = same_stop(process, tmp_path, status=1)
    main = document["threads"][0]["frames"]
    assert main[-1]["function"] == "_start", text
    assert sum(f["kind"] == "jit" for f in main) >= 5, text
    assert any("LazyCompile:" in f["function"] or "hot" in f["function"]
               for f in main if f["kind"] == "jit"), text


def test_a_stopped_process_stays_stopped_and_a_running_one_runs(tmp_path):
    """The reader leaves a process as it found it: stopped (SIGSTOP) stays stopped,
    and, continued, runs on to its end."""
    argv = [fixture_binary("toyjit"), "fp", "1", "sigstop"]
    with self_stopped(argv) as process:
        result = jit_unwind("attach", "--debugger", "none", process.pid)
        assert result.returncode in (0, 1), result  # no Python in it: status 1
        assert "[jit" in result.stdout, result
        assert set(thread_states(process.pid)) == {"T"}
        os.kill(process.pid, signal.SIGCONT)
        assert process.wait(timeout=60) == 0


# -- every path lets the process go ----------------------------------------------------

def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def assert_runs(process):
    """No thread of ``process`` is stopped, and it makes progress (its busy loop)."""
    assert not {"t", "T"} & set(thread_states(process.pid)), thread_states(process.pid)
    before = cpu_ticks(process.pid)
    time.sleep(0.5)
    assert cpu_ticks(process.pid) > before, "the process does not run"
    assert not {"t", "T"} & set(thread_states(process.pid)), thread_states(process.pid)


@contextmanager
def deep_threads():
    """40 threads 60 calls deep through C, asleep, and a busy main thread: the stopped
    part of a read takes long (~0.4 s here)."""
    process = subprocess.Popen([str(fixture_python("3.14")), SCRIPTS / "deep_threads.py"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + STOP_TIMEOUT
        while len(thread_states(process.pid)) < 41:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)  # every thread at the bottom of its calls
        yield process
    finally:
        process.kill()
        process.wait()


def reader_in_stopped_walk(process):
    """A reader started on ``process``, returned once every thread of it is stopped at
    once (the warm-up before stops one at a time): in the middle of the stopped walk."""
    reader = subprocess.Popen(
        [sys.executable, "-m", "jit_unwind", "attach", "--debugger", "none", str(process.pid)],
        env=dict(os.environ, PYTHONPATH=str(REPO / "plugin")), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + STOP_TIMEOUT
    while set(thread_states(process.pid)) != {"t"}:
        assert reader.poll() is None, reader.stderr.read()
        assert time.monotonic() < deadline, "the reader never stopped the process"
        time.sleep(0.002)
    return reader


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                                    signal.SIGKILL], ids=lambda s: signal.Signals(s).name)
def test_a_reader_ended_in_the_middle_lets_the_process_run(signum):
    with deep_threads() as process:
        reader = reader_in_stopped_walk(process)
        reader.send_signal(signum)
        reader.wait(timeout=60)
        errors = reader.stderr.read()
        reader.stderr.close()
        assert "Traceback" not in errors, errors
        if signum != signal.SIGKILL:  # (the kernel detaches a killed tracer's tracees)
            assert reader.returncode == 128 + signum, (reader.returncode, errors)
        assert_runs(process)


def test_a_process_that_exits_in_the_middle(tmp_path):
    with deep_threads() as process:
        reader = reader_in_stopped_walk(process)
        process.kill()
        reader.wait(timeout=120)
        errors = reader.stderr.read()
        reader.stderr.close()
    assert reader.returncode == 2, errors
    assert errors == f"jit-unwind: process {process.pid} exited while it was read\n"


# -- one line, exit 2, for what cannot be read -----------------------------------------

def assert_refused(result, words):
    assert_one_line_error(result, 2, words)
    assert result.stdout == ""


@contextmanager
def sleeper():
    """A process that sleeps (nothing to read in it; what matters is whether it may be
    read)."""
    process = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_pid_that_is_not_there():
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid is free now
    assert_refused(jit_unwind("attach", "--debugger", "none", gone.pid),
                   [f"no process {gone.pid}"])


def test_a_zombie():
    child = subprocess.Popen(["true"])  # exits, and is not waited for: a zombie
    try:
        deadline = time.monotonic() + 30
        while thread_states(child.pid) != ["Z"]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert_refused(jit_unwind("attach", "--debugger", "none", child.pid),
                       [f"process {child.pid} (true) is a zombie", f"parent {os.getpid()}"])
    finally:
        child.wait()


def kernel_thread():
    """A kernel thread's pid (kthreadd's, 2, on most machines)."""
    for name in sorted(os.listdir("/proc"), key=lambda n: int(n) if n.isdigit() else 0):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    flags = int(handle.read().rsplit(")", 1)[1].split()[6])
            except (OSError, ValueError, IndexError):
                continue
            if flags & 0x00200000:  # PF_KTHREAD
                return int(name)
    raise AssertionError("no kernel thread is visible here (/proc of a container?)")


def test_a_kernel_thread():
    pid = kernel_thread()
    assert_refused(jit_unwind("attach", "--debugger", "none", pid),
                   [f"process {pid} (", "is a kernel thread"])


def test_a_thread_of_a_process():
    argv = [fixture_python("3.14"), STOP_INSTEAD_OF_TRAP, SCRIPTS / "jit_scenarios.py",
            "threads"]
    with self_stopped(argv) as process:
        tid = max(int(tid) for tid in os.listdir(f"/proc/{process.pid}/task"))
        assert_refused(jit_unwind("attach", "--debugger", "none", tid),
                       [f"{tid} is a thread of process {process.pid}",
                        f"jit-unwind attach {process.pid}"])


def test_a_process_gdb_traces():
    with sleeper() as process:
        gdb = subprocess.Popen([str(GDB_BINARIES["gdb13"]), "-nx", "-q", "-batch", "-iex",
                                "set debuginfod enabled off", "-p", str(process.pid), "-ex",
                                "shell sleep 60"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while open(f"/proc/{process.pid}/status").read().count(f"TracerPid:\t{gdb.pid}") == 0:
                assert time.monotonic() < deadline, "gdb never attached"
                time.sleep(0.05)
            assert_refused(jit_unwind("attach", "--debugger", "none", process.pid),
                           [f"process {process.pid} (sleep) is already traced by process "
                            f"{gdb.pid} (gdb)", "detach that debugger first"])
        finally:
            gdb.kill()
            gdb.wait()


def run_as(setpriv, pid):
    """``jit-unwind attach --debugger none PID`` run under ``setpriv SETPRIV...``, by
    Debian's python3 (the test's own Python lives under /root, which another user
    cannot enter)."""
    return subprocess.run(["setpriv", *setpriv, "/usr/bin/python3", "-m", "jit_unwind",
                           "attach", "--debugger", "none", str(pid)],
                          env=dict(os.environ, PYTHONPATH=str(REPO / "plugin")),
                          capture_output=True, text=True, timeout=120, cwd="/",
                          stdin=subprocess.DEVNULL)


def test_another_users_process():
    with sleeper() as process:
        result = run_as(["--reuid=65534", "--regid=65534", "--clear-groups"], process.pid)
        assert_refused(result, [f"not allowed to read process {process.pid}",
                                "belongs to another user (uid 0)", "run as that user"])


def test_root_without_cap_sys_ptrace():
    """Root in a container run without SYS_PTRACE: the other root's process holds
    capabilities the reader lacks."""
    with sleeper() as process:
        result = run_as(["--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace"],
                        process.pid)
        assert_refused(result, [f"not allowed to read process {process.pid}",
                                "no CAP_SYS_PTRACE", "--cap-add=SYS_PTRACE"])


def test_nonblocking_reads_a_running_process_and_says_it_may_tear():
    with deep_threads() as process:
        result = jit_unwind("attach", "--debugger", "none", "--nonblocking", process.pid)
        assert result.returncode == 0, result
        assert result.stdout.count("[py] down (") == 40 * 61, result.stdout[-2000:]
        assert (f"jit-unwind: --nonblocking: process {process.pid} ran while it was read: "
                "the stacks may be torn") in result.stderr, result.stderr
        assert_runs(process)
