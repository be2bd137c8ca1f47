"""A core's threads and frames as GDB with jit-unwind shows them, without GDB.

Frame 0's registers come from NT_PRSTATUS.  A frame in JIT code is unwound by the core's
strategies (``frame_unwind.unwind_jit_code``, as the GDB unwinder calls them, recording
into the stop cache), code in a mapped file that no CFI covers by the core's no-CFI
rules as the GDB unwinder does; other code by its file's ``.eh_frame``
(``eh_frame.py``), else by the frame-pointer rule.  Like GDB, a caller whose sp is
not above its callee's ends the walk ("previous frame inner to this frame"), and the walk
stops after ``main``.
Where DWARF says functions are inlined at a pc, each is a frame of its own with the
same registers (GDB's inline frames), named and placed by DWARF."""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

from typing import Dict, List, Optional

from .. import debugger
from .dwarf import SourceFrame

OUTERMOST_FUNCTIONS = ("main",)  # GDB's "backtrace past-main off"
MAX_NATIVE_FRAMES = 5000  # GDB's "backtrace limit" is unlimited; ours is not


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

    def _unwind(self) -> Unwinding:
        process = self.thread.process
        pc, sp = self.registers.get(self.arch.pc), self.registers.get(self.arch.sp)
        if pc is None or sp is None:
            return Unwinding(reason="not enough registers or memory available to unwind "
                                    "further")
        if self.level + max(len(self.sources), 1) >= MAX_NATIVE_FRAMES:
            return Unwinding(reason=f"backtrace limit ({MAX_NATIVE_FRAMES}) exceeded")
        cache = process.cache
        lookup = self.lookup()
        regions = cache.regions()
        registered = False
        if regions.jit_region_at(lookup) is not None:
            named = cache.named_regions()
            registered = named.is_registered(lookup)
            if not registered and not process.plain:
                return self._unwind_jit(pc, sp, named)
            if registered and not process.plain and named.is_trace(lookup):
                # What the GDB unwinder does before GDB's rules for a registered trace.
                traced = self._unwind_jit(pc, sp, named, registered=True)
                if traced is not None:
                    return traced
        elif not process.plain:
            nocfi = self._unwind_nocfi(pc, sp, lookup)
            if nocfi is not None:
                return nocfi
        outer = self.sources[-1].name if self.sources else None
        if (outer or self.symbol_name()) in OUTERMOST_FUNCTIONS:
            return Unwinding(outermost=True)
        caller = None
        located = process.symbols.file_address(lookup)
        if located is not None:
            from ..unwind.cfi import unwind_with_cfi  # here: --python-only walks nothing
            caller = unwind_with_cfi(process.memory, located[0], located[1], self.registers,
                                     self.arch)
            if caller == {}:
                return Unwinding(outermost=True)
        if caller is None and registered:
            # Code registered through GDB's JIT interface: the registered file's CFI,
            # CPython 3.15's steady-state rule at every pc (CFA = frame pointer + 16).
            caller = self._frame_pointer_rule()
        if caller is None:
            caller = self._frame_pointer(lookup)
        if caller is None:
            return Unwinding(reason="cannot unwind this frame: no call frame information "
                                    "and no frame pointer")
        return self._checked(caller, sp)

    def _frame_pointer(self, lookup: int) -> Optional[Dict[str, int]]:
        process = self.thread.process
        found = process.symbols.function(lookup)
        if self.arch.frame_pointer_setup_at(process.memory, found[0] if found else None) \
                is None:
            return None
        return self._frame_pointer_rule()

    def _frame_pointer_rule(self) -> Optional[Dict[str, int]]:
        memory = self.thread.process.memory
        arch = self.arch
        fp = self.registers.get(arch.fp)
        if fp is None:
            return None
        caller_pc = memory.try_read_u64(fp + 8)
        saved = memory.try_read_u64(fp)
        if caller_pc is None or saved is None:
            return None
        return {arch.pc: arch.code_address(caller_pc), arch.sp: fp + 16, arch.fp: saved}

    def _unwind_nocfi(self, pc: int, sp: int, lookup: int) -> Optional[Unwinding]:
        """Code without CFI in a mapped file (a JavaScript engine's builtins): the GDB
        unwinder's rules for it; None where it leaves the frame to the debugger's."""
        cache = self.thread.process.cache
        code = cache.regions().code_at(lookup)
        if code is None:
            return None
        from ..regions.nocfi import SOURCE as NOCFI
        if code.source != NOCFI:
            return None
        from ..unwind.frame_unwind import unwind_code  # here: the strategies' imports, ~5 ms
        result = unwind_code(cache, code, pc, sp, self.registers.get, self.index == 0,
                             lambda: None, self.arch)
        return None if result is None else self._caller(result, sp, in_trace=False)

    def _unwind_jit(self, pc: int, sp: int, regions, registered: bool = False
                    ) -> Optional[Unwinding]:
        """The GDB unwinder's calls; for a ``registered`` trace, None where it leaves
        the frame to GDB's rules."""
        from ..unwind.frame_unwind import unwind_jit_code  # the strategies, once JIT code is met
        process = self.thread.process
        innermost = self.index == 0
        # No stale interpreter frames are known without DWARF's eval-loop variables.
        result = unwind_jit_code(pc, sp, process.memory, regions, self.registers.get,
                                 innermost, process.function_start, registered,
                                 lambda: None, self.arch)
        if result is None:
            return None
        process.cache.record(pc, sp, result)
        return self._caller(result, sp, regions.is_trace(pc if innermost else pc - 1))

    def _caller(self, result, sp: int, in_trace: bool) -> Unwinding:
        if result.ends_walk:
            return Unwinding(outermost=True)  # the core says why (ended_by_unwinder)
        arch = self.arch
        caller = {} if in_trace else {
            k: v for k, v in self.registers.items() if k in arch.callee_saved}
        caller.update(result.saved)
        caller[arch.pc], caller[arch.sp] = result.caller_pc, result.caller_sp
        return self._checked(caller, sp)

    def _checked(self, caller: Dict[str, int], sp: int) -> Unwinding:
        arch = self.arch
        if caller.get(arch.pc, 0) == 0:
            return Unwinding(outermost=True)  # GDB: a zero pc ends the walk
        caller_sp = caller[arch.sp]
        # A leaf the stop interrupted (aarch64: its return address still in the link
        # register) may share its caller's sp.
        leaf = self.index == 0 and arch.link_register is not None and caller_sp == sp
        if caller_sp <= sp and not leaf:
            return Unwinding(reason="previous frame inner to this frame (corrupt stack?)")
        return Unwinding(registers=caller)


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
