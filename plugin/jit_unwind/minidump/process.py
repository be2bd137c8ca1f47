"""A minidump as the debugger interface the commands run over, without a debugger: the
core reader's process, frames and walk (``coreread``) over the minidump's memory,
mapped files and registers."""

import os
from typing import Optional

from ..coreread.memory import CoreMemory
from ..coreread.process import CoreProcess
from ..stop.cache import StopCache
from .image import MinidumpImage


class MinidumpMemory(CoreMemory):
    """The dump's bytes, else a mapped file's where the process could not have written
    (its code, read-only data); written memory the dump leaves out (a stack-only dump:
    the heap, the interpreter's state) is unreadable, never the file's stale bytes."""

    def __init__(self, image: MinidumpImage):
        super().__init__(image)  # type: ignore[arg-type]
        self.dump = image

    def _piece(self, address: int, end: int) -> Optional[bytes]:
        if self.dump.segment_at(address) is None and self.dump.written(address):
            return None
        return super()._piece(address, end)


class MinidumpProcess(CoreProcess):
    debugger_name = "jit-unwind's minidump reader"

    def __init__(self, image: MinidumpImage):
        super().__init__(image, MinidumpMemory(image))  # type: ignore[arg-type]

    def key(self):
        return ("minidump", self._core_path)

    def connection(self):
        return "minidump"  # the region map takes the mappings listed here

    def core_file(self):
        return None  # no ELF core to read segments from

    def minidump_file(self):
        return self._core_path

    def debugger_mappings(self):
        """The process's /proc/PID/maps as the dump kept it (with perms and offsets),
        else its modules."""
        image = self.image
        assert isinstance(image, MinidumpImage)
        return image.mappings or super().debugger_mappings()


def open_minidump(path, sysroot: str = "") -> MinidumpProcess:
    """The minidump at ``path`` ready for the commands (its stop cache made).  OSError
    when it cannot be read, ValueError when it is no minidump we read."""
    return open_image(MinidumpImage(os.fspath(path), sysroot))


def open_image(image: MinidumpImage) -> MinidumpProcess:
    process = MinidumpProcess(image)
    StopCache(process)  # the one stop of a dump: process.cache
    return process
