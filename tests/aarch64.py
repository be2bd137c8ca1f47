"""aarch64 programs on this x86-64 machine: run under qemu-user, debugged by gdb-multiarch.

``make aarch64-fixtures`` (part of ``make fixtures``) puts in place what these helpers
use: the sysroot of Debian's arm64 libc and python3.11 and a qemu 10 in the cache
(tests/fixtures/aarch64/setup.sh), and the toy JIT for aarch64 in build/aarch64.

- ``run_to_core``: run a program under qemu-aarch64 until a fatal signal; qemu writes
  ``qemu_PROG_DATE-TIME_PID.core`` in the working directory (Debian's qemu 7.2 also
  writes an x86 ``core`` of itself, which is deleted).
- ``gdb_core``: GDB on such a core, with the sysroot, with or without the plugin.
Both run qemu without the host's address randomization (``setarch -R``).

- ``gdb_live``: qemu's gdb stub (``qemu-aarch64 -g PORT``; qemu 10 by default, as only
  its stub serves /proc files such as the memory map) with gdb-multiarch attached
  through ``target remote``; it continues to the program's stop, runs the commands and
  kills the program.  The qemu process never outlives the call.

Both GDBs of the tests read aarch64 (``GDBS``): Debian's gdb-multiarch (13) and
gdb-for-pwndbg's GDB 18, which is built for every architecture.
"""

import fcntl
import os
import re
import socket
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

from tests.support import BUILD, GDB_BINARIES, REPO, run_gdb

CACHE = Path(os.environ.get("JIT_UNWIND_CACHE", Path.home() / ".cache" / "jit-unwind"))
SYSROOT = CACHE / "aarch64-sysroot"
QEMU7 = Path("/usr/bin/qemu-aarch64")      # Debian 12's: its cores are what gdb reads
QEMU10 = CACHE / "qemu10" / "qemu-aarch64"  # bookworm-backports': its stub serves /proc
GDB_MULTIARCH = Path("/usr/bin/gdb-multiarch")
GDBS: Dict[str, Path] = {"gdb13": GDB_MULTIARCH, "gdb18": GDB_BINARIES["gdb18"]}
PYTHON311 = SYSROOT / "usr" / "bin" / "python3.11"
TOYJIT = BUILD / "aarch64" / "toyjit"
TOYJIT_PIE = BUILD / "aarch64" / "toyjit-pie"
RUN_TIMEOUT = 120
SYSROOT_SETTING = f"set sysroot {SYSROOT}"
# qemu 10 maps the guest where the host's mmap puts it: without the host's address
# randomization, two runs of a program (one debugged with the plugin, one without) have
# the same addresses.
NO_ASLR = ["setarch", "-R"]


def ensure_fixtures() -> None:
    """Build and install what the aarch64 tests use (seconds when already done); one
    pytest worker at a time."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "aarch64-fixtures.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(["make", "-s", "aarch64-fixtures"], cwd=REPO,
                                capture_output=True, text=True, timeout=600,
                                stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"make aarch64-fixtures failed:\n{result.stdout}{result.stderr}"
    for path in (*GDBS.values(), QEMU7, QEMU10, PYTHON311, TOYJIT, TOYJIT_PIE):
        assert path.exists(), f"{path} is missing: run `make apt-deps venv aarch64-fixtures`"


def run_to_core(program: Sequence, directory: Path, qemu: Path = QEMU7) -> Path:
    """Run ``program`` (an aarch64 executable and its arguments) under ``qemu`` in
    ``directory`` until it dies of a signal; the core file qemu wrote."""
    before = set(directory.glob("qemu_*.core"))
    command = ["bash", "-c", 'ulimit -c unlimited && exec "$@"', "bash", *NO_ASLR,
               str(qemu), "-L", str(SYSROOT), *map(str, program)]
    result = subprocess.run(command, cwd=directory, capture_output=True, text=True,
                            errors="replace", timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    (directory / "core").unlink(missing_ok=True)  # qemu 7.2's core of itself (x86-64)
    cores = sorted(set(directory.glob("qemu_*.core")) - before)
    assert result.returncode < 0 or result.returncode > 128, \
        f"{program} did not die of a signal (status {result.returncode}):\n{result.stderr}"
    assert len(cores) == 1, f"no qemu core in {directory}: {cores}\n{result.stderr}"
    return cores[0]


def core_pid(core: Path) -> int:
    """The process id in the name qemu gives its core (qemu_PROG_DATE-TIME_PID.core),
    which is the one in /tmp/perf-PID.map."""
    return int(re.search(r"_(\d+)\.core$", core.name).group(1))


def gdb_core(program: Path, core: Path, commands: Sequence[str], plugin: bool = True,
             gdb: Path = GDB_MULTIARCH) -> str:
    """What ``gdb`` printed for ``commands`` on ``core`` of ``program``."""
    return run_gdb(gdb, commands, [program], core=core, plugin=plugin,
                   early=[SYSROOT_SETTING])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def qemu_gdb_stub(program: Sequence, qemu: Path = QEMU10,
                  qemu_options: Sequence[str] = ()) -> Iterator[int]:
    """``program`` under ``qemu``'s gdb stub, waiting for GDB; yields the stub's port.
    The qemu process is killed on the way out, whatever GDB did.  ``qemu_options``:
    more of qemu's own (``-E NAME=VALUE`` sets the program's environment)."""
    port = free_port()
    process = subprocess.Popen([*NO_ASLR, str(qemu), "-g", str(port), "-L", str(SYSROOT),
                                *qemu_options, *map(str, program)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def gdb_live(program: Sequence, commands: Sequence[str], plugin: bool = True,
             gdb: Path = GDB_MULTIARCH, qemu: Path = QEMU10,
             stop: Sequence[str] = ("continue",), early: Optional[Sequence[str]] = None,
             qemu_options: Sequence[str] = ()) -> str:
    """``gdb`` attached to ``program`` under qemu's stub: ``stop`` (by default
    ``continue`` to the program's signal), then ``commands``, then ``kill``.  The
    program's process id is in the output's ``[Inferior 1 (process PID) killed]``."""
    with qemu_gdb_stub(program, qemu, qemu_options) as port:
        # GDB retries a refused connection (tcp auto-retry) while qemu starts listening.
        return run_gdb(gdb,
                       [f"file {program[0]}", f"target remote 127.0.0.1:{port}", *stop,
                        *commands, "kill"],
                       plugin=plugin, early=[SYSROOT_SETTING, *(early or ())])
