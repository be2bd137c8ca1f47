"""The fuzzer's core file "in a debugger": jit-unwind's own core reader
(``jit_unwind.coreread``, what ``jit-unwind core --debugger none`` runs) with what a
fuzz case needs laid over it.

:class:`CoreMemory` lays patches and a truncation over the core's memory, so that a fuzz
case never copies the core, and can record every read (address, size and the phase of
the walk it was made in): the fuzzer's "frames before the first corrupted byte the walk
depends on" oracle rests on that.  :class:`CoreProcess` is the reader without DWARF (the
symbol tables name functions: what the fuzz cases were recorded with), optionally
``plain`` (a debugger without jit-unwind) and finding a few globals "from debug info".
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from elftools.elf.elffile import ELFFile

from jit_unwind.coreread import frames as _frames
from jit_unwind.coreread import image as _image
from jit_unwind.coreread import memory as _memory
from jit_unwind.coreread import process as _process
from jit_unwind import model as _model

CoreImage = _image.CoreImage
USER_REGS, PR_REG, PR_PID = _image.USER_REGS, _image.PR_REG, _image.PR_PID
MAX_NATIVE_FRAMES = _model.MAX_FRAMES  # every walk's limit
CoreFrame, CoreThread = _frames.CoreFrame, _frames.CoreThread


@dataclass
class Read:
    address: int
    size: int
    phase: int


class CoreMemory(_memory.CoreMemory):
    """The core's memory with ``patches`` ({address: bytes}) laid over it and every byte
    at file offset ``cut`` or later missing (a truncated core).  ``trace`` keeps every
    read (successful or not) with the phase the walk was in."""

    def __init__(self, image: CoreImage, patches: Optional[Dict[int, bytes]] = None,
                 cut: Optional[int] = None, trace: bool = False):
        super().__init__(image)
        self.patches = sorted((patches or {}).items())
        self.cut = cut
        self.trace: Optional[List[Read]] = [] if trace else None
        self.phase = -1
        self.reads = 0
        self.largest = 0  # the largest read asked for: a debugger allocates that much

    def read(self, address: int, size: int) -> bytes:
        self.reads += 1
        self.largest = max(self.largest, size)
        if self.trace is not None:
            self.trace.append(Read(address, size, self.phase))
        data = super().read(address, size)
        for start, patch in self.patches:
            if start < address + size and address < start + len(patch):
                data = bytearray(data)
                for index in range(max(start, address), min(start + len(patch), address + size)):
                    data[index - address] = patch[index - start]
                data = bytes(data)
        return data

    def core_bytes(self, offset: int, size: int) -> Optional[bytes]:
        if self.cut is not None and offset + size > self.cut:
            return None
        return super().core_bytes(offset, size)


_objects: Dict[Tuple[str, str], Optional[int]] = {}


def _object_symbol(path: str, name: str) -> Optional[int]:
    """The link-time value of symbol ``name`` in ``path``'s .symtab."""
    if (path, name) not in _objects:
        value = None
        try:
            with open(path, "rb") as handle:
                section = ELFFile(handle).get_section_by_name(".symtab")
                for symbol in (section.get_symbol_by_name(name) or ()) if section else ():
                    if symbol["st_value"]:
                        value = symbol["st_value"]
        except Exception:
            value = None
        _objects[(path, name)] = value
    return _objects[(path, name)]


class CoreProcess(_process.CoreProcess):
    """A core file loaded "in a debugger": what the adapters hand to the core."""

    debugger_name = "the fuzzer's core reader"

    def __init__(self, image: CoreImage, memory: CoreMemory, pid: int,
                 core_path: Optional[Path] = None, plain: bool = False,
                 debug_symbols: Tuple[str, ...] = ()):
        """``plain``: the debugger without jit-unwind (JIT frames are not unwound);
        ``debug_symbols``: globals it finds as from debug info (the files' .symtab)."""
        super().__init__(image, memory, pid, core_path, dwarf=False)
        self.plain = plain
        self.debug_symbols = debug_symbols

    def making_frame(self, level: int) -> None:
        self.memory.phase = level  # reads from here on decide this frame and later

    def plain_walk(self) -> List[Tuple[int, int]]:
        """(level, pc) of each frame the debugger finds without jit-unwind."""
        frames = []
        frame = self._threads[0].newest_frame() if self._threads else None
        while frame is not None:
            frames.append((frame.level, frame.registers.get("rip")))
            frame = frame.older()
        return frames

    def file_address(self, address):
        return None  # the base interface's answer, as the fuzz cases were recorded

    def symbol_address(self, name):
        """No debug info: None (the core falls back to the files' symbol tables), but
        for the few names a recipe says GDB would find in its DWARF."""
        if name not in self.debug_symbols:
            return None
        for path in self.module_paths():
            bias = self.symbols.bias(path)
            value = _object_symbol(path, name) if bias is not None else None
            if value:
                return value + bias
        return None
