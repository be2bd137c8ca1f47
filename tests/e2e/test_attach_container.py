"""A live process in a container read from outside it (issue 35, item 2): CPython 3.14
run under ``unshare --mount --pid --fork`` with its interpreter bind-mounted at a path
that does not exist outside (/srv/container-python), its scripts there too, its own
/tmp (a tmpfs: its perf map is there, named by its pid in its own namespace).

Read from the host with ``jit-unwind attach`` with no debugger and through each GDB
(both attach across the namespaces and read the process's files as
``target:/srv/...``): the frames name the interpreter's functions (its files read
through /proc/PID/root), the Python frames name the scripts, each thread's Python
stack is its own (CPython keeps the threads' ids of the container's pid namespace),
and the perf trampolines are named from the container's /tmp (its perf map, its jitdump)."""

import json
import os
import subprocess
import time
from contextlib import contextmanager

import pytest

from tests.e2e.test_attach_no_debugger import STOP_TIMEOUT, thread_states
from tests.e2e.test_cli import jit_unwind
from tests.jit_python import fixture_python
from tests.python_expect import SCRIPTS

INSIDE = "/srv/container-python"  # the interpreter's directory, inside only
SCRIPTS_INSIDE = "/srv/scripts"
# The container: a tmpfs on /srv holding the interpreter (bound) and the scripts, and
# its own /tmp.  The shell stays pid 1 (a pid 1 ignores its own SIGSTOP).
CONTAINER = f"""set -e
mount -t tmpfs container-srv /srv
mkdir -p {INSIDE} {SCRIPTS_INSIDE}
mount --bind "$PYTHON_HOME" {INSIDE}
cp "$SCRIPTS"/stop_instead_of_trap.py "$SCRIPTS"/jit_scenarios.py {SCRIPTS_INSIDE}/
mount -t tmpfs container-tmp /tmp
cd /
"{INSIDE}/bin/python3.14" "$@"
"""
READERS = [["--debugger", "none"], ["--debugger", "gdb"], ["--debugger", "gdb18"]]


def _descendants(pid):
    found = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(word) for word in handle.read().split()]
    except OSError:
        return []


def _python_in(pid):
    for child in _descendants(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                if handle.read().startswith(f"{INSIDE}/bin/python3.14".encode()):
                    return child
        except OSError:
            pass
    return None


@contextmanager
def contained(*args, env=None):
    """The pid (the host's) of python3.14 ARGS run in the container, once it stopped
    itself; the container killed at the end."""
    assert not os.path.exists(INSIDE), f"{INSIDE} must not exist outside the container"
    python_home = fixture_python("3.14").parent.parent
    environment = dict(os.environ, PYTHON_HOME=str(python_home), SCRIPTS=str(SCRIPTS),
                       **(env or {}))
    container = subprocess.Popen(
        ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "sh", "-c", CONTAINER,
         "container", *map(str, args)], env=environment, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STOP_TIMEOUT
        pid = None
        while pid is None or set(thread_states(pid)) != {"T"}:
            assert container.poll() is None, container.stderr.read().decode()
            assert time.monotonic() < deadline, f"{args} never stopped itself"
            time.sleep(0.05)
            pid = pid or _python_in(container.pid)
        assert not os.path.exists(INSIDE), "the container's mounts leaked out"
        yield pid
    finally:
        for process in reversed(_descendants(container.pid)):
            try:
                os.kill(process, 9)
            except OSError:
                pass
        container.kill()
        container.wait()
        container.stderr.close()


def read(pid, reader):
    result = jit_unwind("attach", *reader, "--json", pid)
    assert result.returncode == 0, result
    assert "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def python_stacks(document):
    return {thread["lwp"]: [(f["function"], f["file"]) for f in thread["python"]]
            for thread in document["threads"]}


@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader[-1])
def test_container_jit_threads_read_from_outside(reader):
    script = f"{SCRIPTS_INSIDE}/jit_scenarios.py"
    with contained(f"{SCRIPTS_INSIDE}/stop_instead_of_trap.py", script, "threads",
                   env={"PYTHON_JIT": "1"}) as pid:
        document = read(pid, reader)
    threads = document["threads"]
    assert len(threads) == 3 and threads[0]["lwp"] == pid, document
    stacks = python_stacks(document)
    assert stacks[pid][0] == ("threads", script), stacks
    spinners = [stack for lwp, stack in stacks.items() if lwp != pid]
    for stack in spinners:  # each thread its own stack, found by its id inside
        assert stack[0] == ("spin", script), stacks
        assert stack[-1] == ("Thread._bootstrap", f"{INSIDE}/lib/python3.14/threading.py")
    functions = [f["function"] for thread in threads for f in thread["frames"]]
    # The interpreter's functions, named from its file read through /proc/PID/root.
    assert "_PyEval_EvalFrameDefault" in functions and "_start" in functions, functions
    assert any(name.startswith(f"[jit] spin ({script}:") for name in functions), functions
    assert any(name.startswith(f"[jit shim] spin ({script}:") for name in functions), functions


@pytest.mark.parametrize("option", ["perf", "perf_jit"])
@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader[-1])
def test_container_trampolines_named_from_its_tmp(reader, option):
    """-X perf: the container's /tmp/perf-PID.map; -X perf_jit: its /tmp/jit-PID.dump
    (the process maps it; its pid inside names it and is in its header)."""
    script = f"{SCRIPTS_INSIDE}/jit_scenarios.py"
    with contained("-X", option, f"{SCRIPTS_INSIDE}/stop_instead_of_trap.py", script,
                   "kill") as pid:
        assert not {f"perf-{pid}.map", f"jit-{pid}.dump"} & set(os.listdir("/tmp"))
        inside = [name for name in os.listdir(f"/proc/{pid}/root/tmp")
                  if name.startswith(("perf-", "jit-"))]
        assert len(inside) == 1 and inside[0].startswith(
            "perf-" if option == "perf" else "jit-"), inside
        document = read(pid, reader)
    (thread,) = document["threads"]
    assert [f["function"] for f in thread["python"][:2]] == ["leaf", "hot"], thread
    names = [f["function"] for f in thread["frames"]]
    assert f"py::leaf:{script}" in names and f"py::hot:{script}" in names, names
    assert names[-1] == "_start", names
