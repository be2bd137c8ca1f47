"""A core's threads and frames as GDB with jit-unwind shows them, without GDB.

Frame 0's registers come from NT_PRSTATUS.  Each frame's caller is the core's one
native step (``unwind/native_step.native_caller``, which every reader takes): our
strategies for JIT code and code without CFI (as the GDB unwinder calls them, recording
into the stop cache), else the file's ``.eh_frame``, else the frame-pointer rule.  Like
GDB, a caller whose sp is not above its callee's ends the walk ("previous frame inner
to this frame"), and the walk stops after ``main``.
Where DWARF says functions are inlined at a pc, each is a frame of its own with the
same registers (GDB's inline frames), named and placed by DWARF."""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

from typing import Dict, List, Optional

from .. import debugger
from ..model import MAX_FRAMES, Ending
from .dwarf import SourceFrame

# Why a walk ends, in GDB's words ("Backtrace stopped: ..."): the documents are GDB's.
GDB_REASONS = {
    Ending.NO_REGISTERS: "not enough registers or memory available to unwind further",
    Ending.INNER: "previous frame inner to this frame (corrupt stack?)",
    Ending.NO_RULE: "cannot unwind this frame: no call frame information and no frame "
                    "pointer",
}
GDB_REASONS[Ending.NO_FRAME_POINTER] = GDB_REASONS[Ending.NO_RULE]
GDB_REASONS[Ending.UNREADABLE_RECORD] = GDB_REASONS[Ending.NO_RULE]


class Unwinding:
    """The caller found for a frame, or why none was found (a plain class: making a
    dataclass costs ~1 ms of every run's start)."""

    __slots__ = ("registers", "reason", "outermost")

    def __init__(self, registers: Optional[Dict[str, int]] = None, reason: str = "",
                 outermost: bool = False):
        self.registers = registers
        self.reason = reason  # an error ("Backtrace stopped: ...") when registers is None
        self.outermost = outermost  # a natural end (no caller and no error)


class PhysicalFrame:
    """One frame of the machine's stack: registers, its caller, the functions DWARF
    says run at its pc (inlined ones first)."""

    def __init__(self, thread: "CoreThread", index: int, level: int,
                 registers: Dict[str, int]):
        self.thread = thread
        self.index = index  # 0 for the innermost
        self.level = level  # of its innermost (inlined) frame
        self.registers = registers
        process = thread.process
        self.arch = process.arch
        process.making_frame(level)
        self.sources: List[SourceFrame] = self._sources()
        self.unwinding = self._unwind()  # as GDB sniffs a frame's unwinder when making it

    def lookup(self) -> int:
        pc = self.registers.get(self.arch.pc, 0)
        return pc if self.index == 0 else pc - 1

    def _sources(self) -> List[SourceFrame]:
        process = self.thread.process
        if not process.dwarf or self.arch.pc not in self.registers:
            return []
        located = process.symbols.file_address(self.lookup())
        return process.source_frames(*located) if located is not None else []

    def symbol_name(self) -> Optional[str]:
        found = self.thread.process.symbols.function(self.lookup())
        return found[1] if found else None

    def _outer_name(self, _lookup: int) -> Optional[str]:
        """The name the outermost rule tests: the outermost function DWARF has at the
        pc (``main`` may be inlined into nothing but itself), else the symbol's."""
        outer = self.sources[-1].name if self.sources else None
        return outer or self.symbol_name()

    def _unwind(self) -> Unwinding:
        if self.level + max(len(self.sources), 1) >= MAX_FRAMES:
            return Unwinding(reason=f"backtrace limit ({MAX_FRAMES}) exceeded")
        process = self.thread.process
        from ..unwind.native_step import native_caller  # the strategies, once a walk runs
        caller = native_caller(process.cache, self.registers.get(self.arch.pc),
                               self.registers.get(self.arch.sp), self.registers,
                               self.index == 0, self._outer_name, plain=process.plain,
                               file_address=process.symbols.file_address)
        if caller.registers is not None:
            if caller.registers.get(self.arch.pc, 0) == 0:
                return Unwinding(outermost=True)  # GDB: a zero pc ends the walk
            return Unwinding(registers=caller.registers)
        if caller.ending is Ending.OUTERMOST or caller.ending is None:
            return Unwinding(outermost=True)
        return Unwinding(reason=GDB_REASONS[caller.ending])


class CoreFrame(debugger.Frame):
    """One frame as GDB lists it: a physical frame, or one function inlined in it."""

    def __init__(self, physical: PhysicalFrame, inlined: int = 0):
        self.physical = physical
        self.inlined = inlined  # which of the physical frame's functions, innermost 0
        self.registers = physical.registers

    @property
    def thread(self) -> "CoreThread":
        return self.physical.thread

    @property
    def level(self) -> int:
        return self.physical.level + self.inlined

    def pc(self) -> int:
        pc = self.registers.get(self.physical.arch.pc)
        if pc is None:
            raise debugger.DebuggerError("PC not available")
        return pc

    def register(self, name: str) -> Optional[int]:
        return self.registers.get(name)

    def _source(self) -> Optional[SourceFrame]:
        sources = self.physical.sources
        return sources[self.inlined] if self.inlined < len(sources) else None

    def function_name(self) -> Optional[str]:
        found = self._source()
        if found is not None and found.name:
            return found.name
        return self.physical.symbol_name()

    def source(self):
        found = self._source()
        if found is None or found.filename is None:
            return None
        return found.filename, found.line

    def interpreter_frame(self) -> Optional[int]:
        return None  # DWARF variables are not read: the merge pairs eval loops by count

    def _last(self) -> bool:
        return self.inlined + 1 >= max(len(self.physical.sources), 1)

    def older(self) -> Optional["CoreFrame"]:
        if not self._last():
            return CoreFrame(self.physical, self.inlined + 1)
        unwinding = self.physical.unwinding
        if unwinding.registers is None:
            return None
        physical = PhysicalFrame(self.thread, self.physical.index + 1, self.level + 1,
                                 unwinding.registers)
        return CoreFrame(physical)

    def stop_reason(self) -> str:
        return self.physical.unwinding.reason if self._last() else ""

    @property
    def natural_end(self) -> bool:
        return self._last() and self.physical.unwinding.outermost


class CoreThread(debugger.Thread):
    def __init__(self, process, number: int, state):
        self.process = process
        self.number = number
        self.native_id = state.pid
        self.name = None  # GDB names no thread of a core
        self.state = state

    def newest_frame(self) -> CoreFrame:
        return CoreFrame(PhysicalFrame(self, 0, 0, dict(self.state.registers)))
