"""One read of a live process: check it can be read, stop its threads (or, with
``nonblocking``, read each one's registers alone), run the walk over it, let it go."""

import errno
import os
from typing import Callable, Tuple, TypeVar

from ..target import JitUnwindError
from .process import LiveProcess, live_image
from .memory import LiveMemory
from .snapshot import SnapshotMemory
from .ptrace import PtraceError
from .refusal import why_refused, why_unreadable
from .threads import OneAtATime, stopped

T = TypeVar("T")


class LiveReadError(JitUnwindError):
    """The process cannot be read: the message says why, and the fix."""


def _refused(pid: int, error: PtraceError) -> LiveReadError:
    if error.errno == errno.EPERM:
        return LiveReadError(f"not allowed to read process {pid}: {why_refused(pid)}")
    if error.errno == errno.ESRCH:
        return LiveReadError(why_unreadable(pid) or f"process {pid} exited")
    return LiveReadError(f"cannot trace process {pid}: {error.strerror}")


def read_process(pid: int, walk: Callable[[LiveProcess], T], nonblocking: bool = False
                 ) -> Tuple[T, float]:
    """``walk(process)`` over the process as it was stopped, and how long (s) it stayed
    stopped (with ``nonblocking``: the longest any one thread was).  The walk runs
    twice: while the threads are stopped, with frames named by the symbol tables only,
    which reads all the memory the stacks need (kept); then, the process let go, in
    full over the kept memory.  LiveReadError when it cannot be read or went away
    meanwhile."""
    problem = why_unreadable(pid)
    if problem is not None:
        raise LiveReadError(problem)
    memory = SnapshotMemory(LiveMemory(pid))
    try:
        if nonblocking:
            one_by_one = OneAtATime(pid)
            one_by_one.read()
            image = live_image(pid, one_by_one)
            stopped_for = one_by_one.stopped_for
        else:
            _warm_up(pid, walk)
            with stopped(pid) as threads:
                image = live_image(pid, threads)
                walk(LiveProcess(image, memory, names=False))
            stopped_for = threads.stopped_for
            memory.freeze()
    except PtraceError as error:
        raise _refused(pid, error) from None
    except OSError as error:  # its /proc files went away with it
        if not os.path.isdir(f"/proc/{pid}"):
            raise LiveReadError(f"process {pid} exited while it was read") from None
        raise LiveReadError(f"cannot read process {pid}: {error}") from None
    if not image.threads or why_unreadable(pid) is not None:  # gone, or a zombie now
        raise LiveReadError(f"process {pid} exited while it was read")
    return walk(LiveProcess(image, memory)), stopped_for


def _warm_up(pid: int, walk) -> None:
    """Before the process stops: the walk's modules imported, and a walk made with each
    thread stopped alone for its registers, which reads and keeps (file caches) the
    symbol tables, CFI and JIT regions the stopped walk will want: ~30 ms less
    stopped."""
    _import_the_walk()
    threads = OneAtATime(pid)
    threads.read()
    walk(LiveProcess(live_image(pid, threads), LiveMemory(pid), names=False))


def _import_the_walk() -> None:
    """The modules a walk imports on first use, imported before the process stops
    (~40 ms of a first walk): the whole of the packages it takes most from, and the
    others it needs."""
    import importlib
    import pkgutil
    root = __name__.rsplit(".", 2)[0]
    for package in WALK_PACKAGES:
        module = importlib.import_module(f"{root}.{package}")
        for found in pkgutil.iter_modules(module.__path__):
            importlib.import_module(f"{root}.{package}.{found.name}")
    for name in WALK_MODULES:
        importlib.import_module(f"{root}.{name}")


WALK_PACKAGES = ("cpython", "unwind", "stack")
WALK_MODULES = ("commands.mixed_bt", "commands.render_mixed", "regions.cpython_jit",
                "regions.jitdump", "regions.nocfi", "regions.nocfi_pc", "elf.eh_frame_hdr",
                "elf.facts", "coreread.dwarf", "coreread.units", "coreread.lines")
