"""A live process as the debugger interface the commands run over, without a debugger:
the core reader's process, frames and walk (``coreread``) over this reader's memory,
mapped files and registers."""

from ..coreread.image import ThreadRegisters
from ..coreread.process import CoreProcess
from ..stop.cache import StopCache
from ..target import Memory
from .image import LiveImage, read_maps


class LiveProcess(CoreProcess):
    """What GDB attached to the process would see: a live local process (its
    /proc/PID/maps, perf map and jitdump are this machine's).  ``names``: False names
    frames by the symbol tables only (no DWARF: the walk made while the process is
    stopped, for its memory reads)."""

    debugger_name = "jit-unwind's live reader"

    def __init__(self, image: LiveImage, memory: Memory, names: bool = True):
        super().__init__(image, memory, pid=image.pid)  # type: ignore[arg-type]
        self.dwarf = names  # the symbol tables keep the separate debug files' either way
        StopCache(self)  # this read's one stop: self.cache

    def key(self):
        return ("live", self._pid)

    def connection(self):
        return "native"

    def core_file(self):
        return None


def live_image(pid: int, threads) -> LiveImage:
    """The process's mapped files and the registers of its ``threads`` (a
    StoppedThreads, or a OneAtATime).  OSError when its mappings cannot be read."""
    image = LiveImage(pid, read_maps(pid))
    for tid in threads.order:
        registers = threads.registers(tid, image.layout)
        if registers is not None:
            image.threads.append(ThreadRegisters(tid, registers))
    return image
