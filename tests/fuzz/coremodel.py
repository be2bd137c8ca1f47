"""A core file as a debugger would see it, without a debugger.

:class:`CoreImage` reads a core once (PT_LOAD segments, NT_FILE, each thread's
NT_PRSTATUS registers).  :class:`CoreMemory` is its memory, with patches and a
truncation laid over it so that a fuzz case never copies the core: reads come from the
core's segments, else (like GDB) from the mapped file for file-backed mappings the core
left out.  :class:`CoreProcess`, :class:`CoreThread` and :class:`CoreFrame` implement the
core's debugger interface (``jit_unwind.debugger``) over it: frame 0's registers come from
NT_PRSTATUS, JIT frames are unwound by the core's strategies (as the GDB unwinder calls
them, recording into the stop cache), native frames by their file's ``.eh_frame``
(``unwind/cfi.py``) and else by the frame-pointer rule, as LLDB's walk does.  Like GDB,
a caller whose sp is not above its callee's ends the walk ("previous frame inner to this
frame"), and the walk stops after ``main``.

Every read goes through :class:`CoreMemory`, which can record them (address, size and the
phase of the walk it was made in): the fuzzer's "frames before the first corrupted byte
the walk depends on" oracle rests on that.
"""

import bisect
import contextlib
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from elftools.elf.elffile import ELFFile

from jit_unwind import debugger
from jit_unwind.regions import Mapping
from jit_unwind.target import Memory, MemoryReadError
from jit_unwind.frame_unwind import unwind_jit_code
from jit_unwind.unwind.cfi import unwind_with_cfi
from jit_unwind.unwind.x86_64 import starts_frame_pointer

# user_regs_struct of x86-64, as NT_PRSTATUS's pr_reg holds it (from byte 112).
USER_REGS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax",
             "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
             "fs_base", "gs_base", "ds", "es", "fs", "gs")
PR_REG, PR_PID = 112, 32
CALLEE_SAVED = ("rbp", "rbx", "r12", "r13", "r14", "r15")
OUTERMOST_FUNCTIONS = ("main",)  # GDB's "backtrace past-main off"
MAX_NATIVE_FRAMES = 5000  # the test debugger's own bound (GDB's is "backtrace limit")


@dataclass
class Segment:
    start: int
    end: int  # start + filesz: bytes the core holds
    offset: int
    flags: int


@dataclass
class FileMapping:
    start: int
    end: int
    path: str
    offset: int


@dataclass
class ThreadRegisters:
    pid: int
    registers: Dict[str, int]


class CoreImage:
    """The parts of a core file a debugger reads, parsed once."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.data = self.path.read_bytes()
        self.segments: List[Segment] = []
        self.files: List[FileMapping] = []
        self.threads: List[ThreadRegisters] = []
        with open(self.path, "rb") as handle:
            elf = ELFFile(handle)
            for segment in elf.iter_segments():
                if segment["p_type"] == "PT_LOAD" and segment["p_filesz"]:
                    self.segments.append(Segment(segment["p_vaddr"],
                                                 segment["p_vaddr"] + segment["p_filesz"],
                                                 segment["p_offset"], segment["p_flags"]))
                elif segment["p_type"] == "PT_NOTE":
                    for note in segment.iter_notes():
                        self._note(note)
        self.segments.sort(key=lambda s: s.start)
        self._starts = [s.start for s in self.segments]
        self.files.sort(key=lambda f: f.start)
        self._file_starts = [f.start for f in self.files]

    def _note(self, note) -> None:
        if note["n_type"] == "NT_PRSTATUS":
            desc = note["n_desc"]
            if isinstance(desc, (bytes, bytearray)) and len(desc) >= PR_REG + 8 * 27:
                values = struct.unpack_from("<27Q", desc, PR_REG)
                pid = struct.unpack_from("<i", desc, PR_PID)[0]
                self.threads.append(ThreadRegisters(pid, dict(zip(USER_REGS, values))))
        elif note["n_type"] == "NT_FILE":
            desc = note["n_desc"]
            page = desc["page_size"]
            for entry, name in zip(desc["Elf_Nt_File_Entry"], desc["filename"]):
                if isinstance(name, bytes):
                    name = name.decode("utf-8", "replace")
                self.files.append(FileMapping(entry["vm_start"], entry["vm_end"], name,
                                              entry["page_offset"] * page))

    def segment_at(self, address: int) -> Optional[Segment]:
        index = bisect.bisect_right(self._starts, address) - 1
        if index >= 0 and address < self.segments[index].end:
            return self.segments[index]
        return None

    def file_at(self, address: int) -> Optional[FileMapping]:
        index = bisect.bisect_right(self._file_starts, address) - 1
        if index >= 0 and address < self.files[index].end:
            return self.files[index]
        return None

    def stack_segment(self, thread: int = 0) -> Segment:
        return self.segment_at(self.threads[thread].registers["rsp"])


_file_data: Dict[str, Optional[bytes]] = {}


def _file_bytes(path: str) -> Optional[bytes]:
    if path not in _file_data:
        try:
            _file_data[path] = Path(path).read_bytes()
        except OSError:
            _file_data[path] = None
    return _file_data[path]


@dataclass
class Read:
    address: int
    size: int
    phase: int


class CoreMemory(Memory):
    """The core's memory with ``patches`` ({address: bytes}) laid over it and every byte
    at file offset ``cut`` or later missing (a truncated core).  ``trace`` keeps every
    read (successful or not) with the phase the walk was in."""

    def __init__(self, image: CoreImage, patches: Optional[Dict[int, bytes]] = None,
                 cut: Optional[int] = None, trace: bool = False):
        self.image = image
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
        if size < 0 or address < 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        data = self._base(address, size)
        for start, patch in self.patches:
            if start < address + size and address < start + len(patch):
                data = bytearray(data)
                for index in range(max(start, address), min(start + len(patch), address + size)):
                    data[index - address] = patch[index - start]
                data = bytes(data)
        return data

    def _base(self, address: int, size: int) -> bytes:
        """The bytes at ``address``, pieced together across adjacent segments (as a
        debugger's core target reads them)."""
        pieces = []
        position, end = address, address + size
        while position < end:
            piece = self._piece(position, end)
            if piece is None:
                raise MemoryReadError(address, size)
            pieces.append(piece)
            position += len(piece)
        return b"".join(pieces) if len(pieces) != 1 else pieces[0]

    def _piece(self, address: int, end: int) -> Optional[bytes]:
        """Bytes from ``address`` up to ``end`` or the end of what holds ``address``."""
        segment = self.image.segment_at(address)
        if segment is not None:
            stop = min(end, segment.end)
            offset = segment.offset + address - segment.start
            size = stop - address
            if self.cut is not None and offset + size > self.cut:
                return None
            data = self.image.data[offset:offset + size]
            return data if len(data) == size else None  # a core cut short on disk
        mapping = self.image.file_at(address)
        if mapping is None:
            return None
        stop = min(end, mapping.end)
        content = _file_bytes(mapping.path)
        offset = mapping.offset + address - mapping.start
        size = stop - address
        if content is None or offset + size > len(content):
            return None
        return content[offset:offset + size]


class Symbolizer:
    """Function symbols of the mapped ELF files (address -> name and start)."""

    _tables: Dict[str, Tuple[List[int], List[Tuple[int, int, str]]]] = {}

    def __init__(self, image: CoreImage):
        self.image = image
        self._bias: Dict[str, Optional[int]] = {}

    @classmethod
    def _table(cls, path: str):
        if path not in cls._tables:
            entries = []
            try:
                with open(path, "rb") as handle:
                    elf = ELFFile(handle)
                    for name in (".symtab", ".dynsym"):
                        section = elf.get_section_by_name(name)
                        if section is None:
                            continue
                        for symbol in section.iter_symbols():
                            if (symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_value"]
                                    and symbol["st_shndx"] != "SHN_UNDEF"):
                                entries.append((symbol["st_value"],
                                                symbol["st_value"] + max(symbol["st_size"], 1),
                                                symbol.name))
                        if entries:
                            break
            except Exception:
                entries = []
            entries.sort()
            cls._tables[path] = ([e[0] for e in entries], entries)
        return cls._tables[path]

    _first_vaddr: Dict[str, Optional[int]] = {}

    @classmethod
    def first_vaddr(cls, path: str) -> Optional[int]:
        if path not in cls._first_vaddr:
            try:
                with open(path, "rb") as handle:
                    cls._first_vaddr[path] = min(
                        seg["p_vaddr"] for seg in ELFFile(handle).iter_segments()
                        if seg["p_type"] == "PT_LOAD")
            except Exception:
                cls._first_vaddr[path] = None
        return cls._first_vaddr[path]

    def bias(self, path: str) -> Optional[int]:
        """Load bias of ``path``: its offset-0 mapping minus its first PT_LOAD's page."""
        if path not in self._bias:
            bias = None
            first = min((f for f in self.image.files if f.path == path),
                        key=lambda f: f.offset, default=None)
            vaddr = self.first_vaddr(path)
            if first is not None and first.offset == 0 and vaddr is not None:
                bias = first.start - (vaddr & ~0xFFF)
            self._bias[path] = bias
        return self._bias[path]

    def file_address(self, address: int) -> Optional[Tuple[str, int]]:
        mapping = self.image.file_at(address)
        if mapping is None or not mapping.path.startswith("/"):
            return None
        bias = self.bias(mapping.path)
        return None if bias is None else (mapping.path, address - bias)

    def function(self, address: int) -> Optional[Tuple[int, str]]:
        """(run-time start, name) of the function holding ``address``."""
        located = self.file_address(address)
        if located is None:
            return None
        path, file_address = located
        starts, entries = self._table(path)
        index = bisect.bisect_right(starts, file_address) - 1
        for candidate in range(index, max(index - 16, -1), -1):  # sizes may nest
            start, end, name = entries[candidate]
            if start <= file_address < end:
                return start + self.bias(path), name
        return None


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


@dataclass
class Unwinding:
    """The caller the test debugger found for a frame, or why it found none."""

    registers: Optional[Dict[str, int]] = None
    reason: str = ""  # an error ("Backtrace stopped: ...") when registers is None
    outermost: bool = False  # a natural end (no caller and no error)


class CoreFrame(debugger.Frame):
    def __init__(self, thread: "CoreThread", level: int, registers: Dict[str, int]):
        self.thread = thread
        self._level = level
        self.registers = registers
        process = thread.process
        process.memory.phase = level  # reads from here on decide this frame and later
        self._unwinding = self._unwind()  # as GDB sniffs a frame's unwinder when making it

    @property
    def level(self) -> int:
        return self._level

    def pc(self) -> int:
        pc = self.registers.get("rip")
        if pc is None:
            raise debugger.DebuggerError("PC not available")
        return pc

    def register(self, name: str) -> Optional[int]:
        return self.registers.get(name)

    def function_name(self) -> Optional[str]:
        found = self.thread.process.symbols.function(self._lookup())
        return found[1] if found else None

    def source(self):
        return None

    def interpreter_frame(self) -> Optional[int]:
        return None  # no DWARF here: the merge pairs eval loops by count

    def _lookup(self) -> int:
        pc = self.registers.get("rip", 0)
        return pc if self._level == 0 else pc - 1

    def _unwind(self) -> Unwinding:
        process = self.thread.process
        pc, sp = self.registers.get("rip"), self.registers.get("rsp")
        if pc is None or sp is None:
            return Unwinding(reason="not enough registers or memory available to unwind "
                                    "further")
        if self._level + 1 >= MAX_NATIVE_FRAMES:
            return Unwinding(reason=f"backtrace limit ({MAX_NATIVE_FRAMES}) exceeded")
        cache = process.cache
        lookup = self._lookup()
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
        name = self.function_name()
        if name in OUTERMOST_FUNCTIONS:
            return Unwinding(outermost=True)
        caller = None
        located = process.symbols.file_address(lookup)
        if located is not None:
            caller = unwind_with_cfi(process.memory, located[0], located[1], self.registers)
            if caller == {}:
                return Unwinding(outermost=True)
        if caller is None and registered:
            # Code registered through GDB's JIT interface: the registered file's CFI,
            # CPython 3.15's steady-state rule at every pc (CFA = rbp + 16).
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
        code = process.memory.try_read(found[0], 8) if found else None
        if code is None or not starts_frame_pointer(code):
            return None
        return self._frame_pointer_rule()

    def _frame_pointer_rule(self) -> Optional[Dict[str, int]]:
        process = self.thread.process
        rbp = self.registers.get("rbp")
        if rbp is None:
            return None
        caller_pc = process.memory.try_read_u64(rbp + 8)
        saved = process.memory.try_read_u64(rbp)
        if caller_pc is None or saved is None:
            return None
        return {"rip": caller_pc, "rsp": rbp + 16, "rbp": saved}

    def _unwind_jit(self, pc: int, sp: int, regions, registered: bool = False
                    ) -> Optional[Unwinding]:
        """The GDB unwinder's calls (nothing catches here); for a ``registered`` trace,
        None where it leaves the frame to GDB's rules."""
        process = self.thread.process
        innermost = self._level == 0
        # No stale interpreter frames are known to the model (lambda: None).
        result = unwind_jit_code(pc, sp, process.memory, regions, self.registers.get,
                                 innermost, process.function_start, registered,
                                 lambda: None)
        if result is None:
            return None
        process.cache.record(pc, sp, result)
        if result.ends_walk:
            return Unwinding(outermost=True)  # the core says why (ended_by_unwinder)
        in_trace = regions.is_trace(pc if innermost else pc - 1)
        caller = {} if in_trace else {
            k: v for k, v in self.registers.items() if k in CALLEE_SAVED}
        caller.update(result.saved)
        caller["rip"], caller["rsp"] = result.caller_pc, result.caller_sp
        return self._checked(caller, sp)

    def _checked(self, caller: Dict[str, int], sp: int) -> Unwinding:
        if caller.get("rip", 0) == 0:
            return Unwinding(outermost=True)  # GDB: a zero pc ends the walk
        if caller["rsp"] <= sp:
            return Unwinding(reason="previous frame inner to this frame (corrupt stack?)")
        return Unwinding(registers=caller)

    def older(self) -> Optional["CoreFrame"]:
        if self._unwinding.registers is None:
            return None
        return CoreFrame(self.thread, self._level + 1, self._unwinding.registers)

    def stop_reason(self) -> str:
        return self._unwinding.reason

    @property
    def natural_end(self) -> bool:
        return self._unwinding.outermost


class CoreThread(debugger.Thread):
    def __init__(self, process: "CoreProcess", number: int, state: ThreadRegisters):
        self.process = process
        self.number = number
        self.native_id = state.pid
        self.name = None
        self.state = state

    def newest_frame(self) -> CoreFrame:
        return CoreFrame(self, 0, dict(self.state.registers))


class CoreProcess(debugger.Process):
    """A core file loaded "in a debugger": what the adapters hand to the core."""

    def plain_walk(self) -> List[Tuple[int, int]]:
        """(level, pc) of each frame the debugger finds without jit-unwind."""
        frames = []
        frame = self._threads[0].newest_frame() if self._threads else None
        while frame is not None:
            frames.append((frame.level, frame.registers.get("rip")))
            frame = frame.older()
        return frames

    debugger_name = "the fuzzer's core reader"

    def __init__(self, image: CoreImage, memory: CoreMemory, pid: int,
                 core_path: Optional[Path] = None, plain: bool = False,
                 debug_symbols: Tuple[str, ...] = ()):
        """``plain``: the debugger without jit-unwind (JIT frames are not unwound);
        ``debug_symbols``: globals it finds as from debug info (the files' .symtab)."""
        self.plain = plain
        self.debug_symbols = debug_symbols
        self.image = image
        self.memory = memory
        self._pid = pid
        self._core_path = str(core_path or image.path)
        self.symbols = Symbolizer(image)
        self.warnings: List[str] = []
        self.cache = None  # the StopCache the adapter owns; set by the harness
        self._threads = [CoreThread(self, i + 1, state)
                         for i, state in enumerate(image.threads)]

    def pid(self):
        return self._pid

    def key(self):
        return ("core", self._core_path)

    def connection(self):
        return "core"

    def core_file(self):
        return self._core_path

    def debugger_mappings(self):
        return [Mapping(f.start, f.end, "r--p", f.path, f.offset) for f in self.image.files]

    def module_paths(self):
        return sorted({f.path for f in self.image.files if f.path.startswith("/")})

    def threads(self):
        return list(self._threads)

    def selected_thread(self):
        return self._threads[0] if self._threads else None

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

    def member_offset(self, type_name, member_path):
        return None

    def function_start(self, address):
        found = self.symbols.function(address)
        return found[0] if found else None

    def keep_selection(self):
        return contextlib.nullcontext()

    def warn(self, text):
        self.warnings.append(text)
