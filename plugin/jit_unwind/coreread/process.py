"""A core file as the debugger interface (``jit_unwind.debugger.Process``) the commands
run over: what ``jit-unwind core --debugger none`` and the fuzzer's model hand to
``py-mixed-bt``."""

import contextlib
import os
from typing import List, Optional

from .. import debugger
from ..model import Mapping
from ..stop.cache import StopCache
from .dwarf import source_frames
from .frames import CoreThread
from .image import CoreImage
from .memory import CoreMemory
from .symbols import Symbolizer


class CoreProcess(debugger.Process):
    """``dwarf``: names, inlined functions and lines from DWARF (GDB's view); without,
    the symbol tables' names alone.  ``plain``: no JIT frame is unwound by the core (the
    fuzzer's model of a debugger without jit-unwind)."""

    debugger_name = "jit-unwind's core reader"
    plain = False

    def __init__(self, image: CoreImage, memory: Optional[CoreMemory] = None,
                 pid: Optional[int] = None, core_path=None,
                 dwarf: bool = True):
        self.image = image
        self.memory = memory if memory is not None else CoreMemory(image)
        self.dwarf = dwarf
        self._pid = pid if pid is not None else (
            image.pid or (image.threads[0].pid if image.threads else None))
        self._core_path = str(core_path or image.path)
        self.symbols = Symbolizer(image, debug_files=dwarf)
        self.warnings: List[str] = []
        self._sources: dict = {}  # (path, file address) -> its SourceFrames
        from ..arch import X86_64, by_elf_machine
        self.arch = by_elf_machine(image.machine) or X86_64
        self._threads = [CoreThread(self, i + 1, state)
                         for i, state in enumerate(image.threads)]

    def source_frames(self, path: str, file_address: int) -> list:
        """The functions DWARF has at ``file_address`` of ``path``, inlined ones first
        (a deep recursion asks for the same few pcs again and again)."""
        key = (path, file_address)
        found = self._sources.get(key)
        if found is None:
            found = self._sources[key] = source_frames(path, file_address)
        return found

    def making_frame(self, level: int) -> None:
        """Called as each physical frame is made (the fuzzer records reads by it)."""

    def pid(self):
        return self._pid

    def key(self):
        return ("core", self._core_path)

    def connection(self):
        return "core"

    def core_file(self):
        return self._core_path

    def sysroot(self):
        return getattr(self.image, "sysroot", "")

    def debugger_mappings(self):
        return [Mapping(f.start, f.end, "r--p", f.path, f.offset) for f in self.image.files]

    def module_paths(self):
        return sorted({f.path for f in self.image.files if f.path.startswith("/")})

    def threads(self):
        return list(self._threads)

    def selected_thread(self):
        return self._threads[0] if self._threads else None

    def symbol_address(self, name):
        return None  # no debug info is searched for globals: the files' symbol tables are

    def member_offset(self, type_name, member_path):
        return None

    def function_start(self, address):
        found = self.symbols.function(address)
        return found[0] if found else None

    def file_address(self, address):
        return self.symbols.file_address(address)

    def keep_selection(self):
        return contextlib.nullcontext()

    def warn(self, text):
        self.warnings.append(text)


def open_core(path, executable: Optional[str] = None, sysroot: str = "") -> CoreProcess:
    """The core at ``path`` ready for the commands (its stop cache made), ``executable``
    its program when known (a core without NT_FILE is read through it), ``sysroot``
    where the files it names are.  OSError when it cannot be read, ValueError when it
    is no 64-bit little-endian core."""
    if executable:  # a relative path would not be taken for a file's (module_paths)
        executable = os.path.abspath(executable)
    if sysroot:  # its debug packages, as GDB finds them
        from ..elf.debug_files import look_under
        look_under(sysroot)
    process = CoreProcess(CoreImage(path, executable, sysroot))
    StopCache(process)  # the one stop of a core: process.cache
    return process
