"""The backtrace of one thread through JIT code, over a debugger that cannot be handed
registers to unwind from (LLDB): its own frames ("input frames") where they are right,
ours from JIT code on.

The input frames are kept while they are right.  From the first frame whose pc is JIT
code, the core's strategies unwind; the walk rejoins the input frames where a caller's
pc and sp match one of them.  Where no input frame matches a native caller, the walk
goes on by its file's .eh_frame, else by the core's strategies for code without CFI
(its prologue decoded from its symbol's start), else by the frame-pointer rule when the
caller's function keeps one (``push rbp; mov rbp, rsp``), and ends with a reason
otherwise.  After the last input frame the debugger gave up; if its caller (return
address at CFA - 8) is JIT code, the walk goes on from there.

Everything the walk asks of the debugger goes through ``debugger.Frame`` (the input
frames) and ``debugger.Process`` (symbols, modules); what it unwinds it records in the
StopCache, as GDB's unwinder does.
"""

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..arch import Architecture
from ..debugger import DebuggerError, Frame
from ..model import MAX_FRAMES, Caller, Ending, ends_backtrace
from ..regions.nocfi_pc import function_in
from ..records import field, record
from ..stop.cache import READ_ERRORS, StopCache
from ..unwind.context import follows_call
from ..unwind.native_step import native_caller
from .tail_calls import TailCalls

Registers = Dict[str, int]
MAX_TAIL_FRAMES = 8


@record
class Step:
    """One frame of the walk: an input frame (``index``), or a frame the walk found at
    ``pc``/``sp`` (``jit``: JIT code, named from the regions; else native code the
    debugger symbolises), or (``pc`` None) a ``note``: why the walk ended after the frame
    before.  What the unwinder found for a JIT frame is in the StopCache
    (``cache.record``).  ``position``: where a frame provider put it among the thread's
    frames."""

    index: Optional[int] = None
    pc: Optional[int] = None
    sp: Optional[int] = None
    jit: bool = False
    registers: Registers = field(default_factory=dict)
    note: str = ""
    unreadable: bool = False  # JIT code the core file lacks
    position: Optional[int] = None
    artificial: bool = False  # a function that tail-called the frame before (tail_calls)


def walk_registers(arch: Architecture) -> Tuple[str, ...]:
    """The registers a caller's unwind may need: pc, sp, the callee-saved ones and the
    link register (a frame the stop interrupted may not have saved it yet)."""
    link = (arch.link_register,) if arch.link_register else ()
    return (arch.pc, arch.sp, *arch.callee_saved, *link)


def frame_registers(frame: Frame, arch: Architecture) -> Registers:
    """The registers of ``frame`` a caller's unwind may need, those the debugger knows."""
    values = {}
    for name in walk_registers(arch):
        value = frame.register(name)
        if value is not None:
            values[name] = value
    return values


def _input_pc(frame: Frame) -> Optional[int]:
    try:
        return frame.pc()
    except DebuggerError:
        return None


def _no_log(_message) -> None:
    pass


class ThreadWalk:
    def __init__(self, cache: StopCache, input_frames: Sequence[Frame],
                 past_native_end: bool = False, log: Callable = _no_log,
                 call_site_at: Optional[Callable[[int], bool]] = None):
        """``input_frames``: the debugger's frames of the thread, innermost first.
        ``past_native_end``: also go on after the debugger's last frame when its caller
        is native code (LLDB 19 gives up on some callers of frames it unwound).  ``log``
        takes a debug message (or a callable making one).  ``call_site_at(address)``:
        whether debug information describes a call site of the function's own there
        (stack/tail_calls.py; without it: no tail-call frames)."""
        self.past_native_end = past_native_end
        self.cache = cache
        self.process = cache.process
        self.memory = cache.process.memory
        self.arch = cache.process.arch
        self.regions = cache.regions()  # named (executors read) once JIT code is met
        self.inputs = input_frames
        self.count = len(input_frames)
        self.log = log
        self._by_pc_sp: Optional[Dict[Tuple[Optional[int], Optional[int]], int]] = None
        self.tail_calls = TailCalls(self.memory.try_read, self.process.symbol_at,
                                    call_site_at) if call_site_at is not None else None
        self.out: List[Step] = []

    @property
    def by_pc_sp(self) -> Dict[Tuple[Optional[int], Optional[int]], int]:
        """(pc, sp) -> index of the first input frame there; made when a walk through
        JIT code first looks for the debugger's frames again (most stops never do)."""
        if self._by_pc_sp is None:
            self._by_pc_sp = {}
            for index, frame in enumerate(self.inputs):
                self._by_pc_sp.setdefault((_input_pc(frame), frame.sp()), index)
        return self._by_pc_sp

    # -- symbols -----------------------------------------------------------------
    def function_start(self, address: int) -> Optional[int]:
        return self.process.function_start(address)

    def function_name(self, address: int) -> str:
        symbol = self.process.symbol_at(address)
        return symbol.name if symbol is not None else ""

    def is_jit(self, pc: Optional[int], innermost: bool) -> bool:
        """JIT code we unwind: a debugger's JIT loader has rules for registered code,
        which we take over only for a trace (unwind_registered_trace)."""
        if pc is None:
            return False
        lookup = pc if innermost else pc - 1
        if self.regions.jit_region_at(lookup) is None:
            return False
        named = self.cache.named_regions()
        return not named.is_registered(lookup) or named.is_trace(lookup)

    # -- the walk ------------------------------------------------------------------
    def run(self) -> List[Step]:
        index = 0
        while index < self.count and len(self.out) < MAX_FRAMES:
            frame = self.inputs[index]
            pc = _input_pc(frame)
            if pc is not None and self.is_jit(pc, index == 0):
                registers = frame_registers(frame, self.arch)
                sp = frame.sp()
                if sp is None and index:  # LLDB lost it (aarch64): the callee's CFA
                    sp = self.inputs[index - 1].cfa()
                    if sp is not None:
                        registers[self.arch.sp] = sp
                if sp is None:
                    self.out.append(Step(index=index))
                    return self.out
                resumed = self.walk_from(pc, sp, registers, index == 0, index)
                if resumed is None:
                    return self.out
                index = resumed
                continue
            if index and pc is not None and self.outside_code(frame, pc):
                # The debugger's unwinder went wrong (LLDB 19 past some callers of JIT
                # code): the frame before's caller from its .eh_frame instead.
                if self.out and self.out[-1].index == index - 1:
                    self.resume_with_cfi(index - 1)
                return self.out
            self.out.append(Step(index=index))
            index += 1
        if self.count and self.out and self.out[-1].index == self.count - 1:
            self.after_input(self.count - 1)
        return self.out

    def outside_code(self, frame: Frame, pc: int) -> bool:
        """A caller's pc outside every executable mapping (when the mappings are known)."""
        return (len(self.regions.mappings) > 0 and not self.regions.is_executable(pc - 1)
                and not frame.is_artificial())

    def resume_with_cfi(self, index: int) -> None:
        """Go on from the caller of input frame ``index`` as the native step finds it
        (its .eh_frame, where the debugger's unwinder went wrong)."""
        arch = self.arch
        registers = frame_registers(self.inputs[index], arch)
        pc, sp = registers.get(arch.pc), registers.get(arch.sp)
        if pc is None or sp is None:
            return
        found = self.caller_of(pc, sp, registers, False)
        if found.registers is not None and found.ending is None:
            caller = found.registers
            self.walk_from(caller[arch.pc], caller[arch.sp], caller, False, index + 1)

    def after_input(self, index: int) -> None:
        """The debugger ended its walk at input frame ``index``: go on when its caller
        is JIT code (x86-64: its return address is the word below the CFA)."""
        arch = self.arch
        if not arch.return_address_pushed:
            return
        last = self.inputs[index]
        cfa = last.cfa()
        if not cfa or cfa % 8:
            return
        caller_pc = self.memory.try_read_u64(cfa - 8)
        if caller_pc is None:
            return
        if not self.is_jit(caller_pc, False) and not (
                self.past_native_end and follows_call(self.memory, self.regions, caller_pc)):
            return
        registers = frame_registers(last, arch)
        registers[arch.pc], registers[arch.sp] = caller_pc, cfa
        # The caller's rbp: saved by the last frame's prologue when it keeps a frame
        # pointer; else the last frame left it as it found it.
        last_pc = _input_pc(last)
        start = self.function_start(last_pc - 1) if last_pc is not None else None
        fp = registers.get(arch.fp)
        if arch.frame_pointer_setup_at(self.memory, start) is not None and fp is not None:
            saved = self.memory.try_read_u64(fp)
            if saved is None:
                registers.pop(arch.fp, None)
            else:
                registers[arch.fp] = saved
        self.walk_from(caller_pc, cfa, registers, False, index + 1)

    def walk_from(self, pc: int, sp: int, registers: Registers, innermost: bool,
                  next_input: int) -> Optional[int]:
        """Walk from a frame at ``pc``/``sp``; return the input frame index to resume
        at, or None when the walk ended here."""
        arch = self.arch
        while len(self.out) < MAX_FRAMES:
            match = self.by_pc_sp.get((pc, sp))
            if match is not None and match >= next_input and not innermost:
                if not self.is_jit(pc, False) and not self.in_unknown_copy(pc - 1):
                    # the debugger's frame: its registers are its own; with the
                    # artificial (tail-call) frames it lists before it
                    while match > next_input and self.inputs[match - 1].is_artificial():
                        match -= 1
                    return match
            jit = self.is_jit(pc, innermost)
            if not jit:
                rejoin = self.rejoin_main(pc, next_input)
                if rejoin is not None:
                    return rejoin
            unreadable = jit and self.memory.try_read(pc if innermost else pc - 1, 1) is None
            self.out.append(Step(pc=pc, sp=sp, jit=jit, registers=dict(registers),
                                 unreadable=unreadable))
            caller = self.caller_of(pc, sp, registers, innermost)
            if jit:
                self.log_jit_frame(pc, sp, caller)
            if caller.registers is None or caller.ending is Ending.NO_RETURN_ADDRESS:
                if caller.ending is not Ending.OUTERMOST:
                    self.stop(pc, sp, self.reason(caller, pc))
                return None
            registers = caller.registers
            callee = pc if innermost else pc - 1
            pc, sp = registers[arch.pc], registers[arch.sp]
            innermost = False
            if not jit and arch.return_address_pushed:
                self.add_tail_calls(callee, pc, sp, registers)
        self.out.append(Step(note=f"more than {MAX_FRAMES} frames"))
        return None

    def add_tail_calls(self, callee: int, pc: int, sp: int, registers: Registers) -> None:
        """The frames of the functions that tail-called the native frame running
        ``callee`` since its caller at return address ``pc`` called (LLDB's
        artificial frames), unless the debugger's own frames take over at the caller."""
        match = self.by_pc_sp.get((pc, sp))
        if self.tail_calls is None or match is not None and not self.is_jit(pc, False):
            return
        callee_start = self.function_start(callee)
        if callee_start is None or len(self.out) >= MAX_FRAMES - MAX_TAIL_FRAMES:
            return
        for after in self.tail_calls.between(pc, callee_start):
            self.out.append(Step(pc=after, sp=sp, registers=dict(registers),
                                 artificial=True))

    def log_jit_frame(self, pc: int, sp: int, caller: Caller) -> None:
        level = len(self.out) - 1
        self.log(lambda: f"frame #{level} pc={pc:#x} sp={sp:#x}: {caller.unwound}")

    def caller_of(self, pc: int, sp: int, registers: Registers, innermost: bool) -> Caller:
        """The core's one native step for the frame at ``pc``/``sp``."""
        return native_caller(self.cache, pc, sp, registers, innermost, self.function_name)

    def reason(self, caller: Caller, pc: int) -> str:
        """Why the walk ends after the frame at ``pc``, as the last frame says it."""
        name = self.function_name(pc - 1) or hex(pc)
        if caller.ending is Ending.INNER:
            return "previous frame inner to this frame (corrupt stack?)"
        if caller.ending is Ending.NO_FRAME_POINTER:
            return f"no frame pointer known for {name}"
        if caller.ending is Ending.UNREADABLE_RECORD:
            return f"cannot read the frame of {name} at {caller.address:#x}"
        if caller.ending is Ending.NO_RETURN_ADDRESS and caller.registers is not None:
            return (f"the caller found for {name} has pc "
                    f"{caller.registers[self.arch.pc]:#x}: no return address")
        return (f"{name} keeps no frame pointer and {self.process.debugger_name} cannot "
                f"unwind it from registers found through JIT code")

    def rejoin_main(self, pc: int, next_input: int) -> Optional[int]:
        """The input frame of ``main`` at ``pc`` when the debugger has one: a program has
        one main frame, so the debugger's (and its callers) are kept even where our sp
        for it differs (LLDB unwound through JIT code with our symbol file's
        .eh_frame)."""
        if not ends_backtrace(self.function_name(pc - 1)):
            return None
        for index in range(next_input, self.count):
            if _input_pc(self.inputs[index]) == pc:
                return index
        return None

    def stop(self, pc: int, sp: int, reason: str) -> None:
        """The walk ends after the native frame at ``pc``/``sp``, for ``reason``: kept in
        the cache as GDB's own reasons are, for py-mixed-bt."""
        self.cache.debugger_stops[(pc, sp)] = reason
        self.out.append(Step(note=reason))

    def in_unknown_copy(self, address: int) -> bool:
        """True for code without CFI the debugger has no symbol for but a mapped file
        names (V8's builtins remapped from node's executable): the debugger unwinds it
        by its own heuristics (LLDB: rbp, passing the JIT code's registers on to the
        caller), so the walk does not rejoin its frames there but unwinds it by the
        no-CFI rules (an entry record's saved registers)."""
        if self.process.symbol_at(address) is not None:
            return False
        try:
            # The symbol of the mapped file at that mapping's offset (a second mapping
            # of a file's code, as V8 maps node's builtins near its JIT code, is no
            # module's to a debugger).
            region = self.regions.nocfi_at(address)
            return region is not None and function_in(region, address) is not None
        except READ_ERRORS:  # an unreadable file: the walk goes on without its names
            return False
