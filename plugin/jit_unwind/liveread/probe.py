"""Whether this machine lets the reader read a live process at all, tried on a child of
its own (the one process every ptrace_scope but 3 lets it trace): ptrace's seize,
interrupt and register read, process_vm_readv, /proc/PID/mem.  ``jit-unwind doctor``
says what it found and the fix."""

import errno
import subprocess
import sys
import time
from typing import List, Tuple

from . import ptrace
from .image import read_maps
from .memory import LiveMemory
from .threads import StoppedThreads

# (what failed, the fix); [] when a live read works.
Problems = List[Tuple[str, str]]
_SECCOMP = ("run the container with --cap-add=SYS_PTRACE (Docker's seccomp profile "
            "allows ptrace and process_vm_readv with it), or --security-opt "
            "seccomp=unconfined")


def probe() -> Problems:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.05)
        return _probe(child.pid)
    finally:
        child.kill()
        child.wait()


def _probe(pid: int) -> Problems:
    threads = StoppedThreads(pid)
    try:
        threads.stop()
        if threads.registers(pid, ("pc",)) is None:
            return [("ptrace: a thread stopped, but its registers could not be read",
                     "a kernel without PTRACE_GETREGSET (before 2.6.34) is not supported")]
    except ptrace.PtraceError as error:
        if error.errno == errno.EPERM:
            return [("ptrace is refused even for a child of this process (a seccomp "
                     "profile, or a container without CAP_SYS_PTRACE)", _SECCOMP)]
        return [(f"ptrace fails: {error.strerror}", _SECCOMP)]
    finally:
        threads.release()
    start = next((m.split("-")[0] for m in read_maps(pid).splitlines() if " r" in m), "0")
    memory = LiveMemory(pid)
    try:
        data = memory.try_read(int(start, 16), 8)
        if data is None:
            return [("neither process_vm_readv nor /proc/PID/mem reads a child's memory",
                     _SECCOMP)]
        if memory.uses_file():
            return [("process_vm_readv is refused (a seccomp profile): memory is read "
                     "through /proc/PID/mem instead, which works, more slowly", _SECCOMP)]
    finally:
        memory.close()
    return []
