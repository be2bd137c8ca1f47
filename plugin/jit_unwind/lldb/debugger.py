"""The core's debugger interface (``jit_unwind.debugger``) over LLDB's SB objects.

A thread's frames are those of its walk (the core's ``thread_walk.ThreadWalk`` over
LLDB's frames as ``InputFrame``s): LLDB's own frames while they are right, then the
frames found through JIT code.  On LLDB 22+ the frame provider made that walk for the
stop and kept it in the StopCache; on LLDB 19 (no providers) it is made here over
LLDB's frames.  Native frames the walk found are expanded into their
inlined functions at pc - 1, as GDB and LLDB list a caller.  The list ends at ``main``
as GDB's ``backtrace past-main off`` does, so that both debuggers give the same stack.

No LLDB error leaves this module: methods return None, or raise DebuggerError.  LLDB's
API says it failed through invalid objects and SBError, never by raising; only Python's
conversion of an argument raises (OverflowError for an address outside 64 bits), so
addresses are checked before they reach it (``_address``).
"""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

import contextlib
import os
import sys
from typing import Dict, List, Optional, Tuple

import lldb

from ..debugger import DebuggerError, Frame, Process, Symbol, Thread
from ..target import JitUnwindError
from ..regions import Mapping
from ..regions.minidump import minidump_maps
from ..stop.cache import StopCache
from ..model import MAX_FRAMES, ends_backtrace
from ..stack.thread_walk import Step, ThreadWalk
from ..stack.walk_frames import WalkFrame, thread_steps, walk_frames
from .memory import LldbMemory
from .own_module import is_own_module
from .settings import debug_log

MAX_REGIONS = 100_000
MAX_INLINE_DEPTH = 64


def _unsigned(value: "lldb.SBValue") -> Optional[int]:
    if value is None or not value.IsValid():
        return None
    error = lldb.SBError()
    number = value.GetValueAsUnsigned(error, 0)
    return number if error.Success() else None


def _file_name(spec: "lldb.SBFileSpec") -> Optional[str]:
    """A source file's path, normalised ("a/./b/../c" -> "a/c"); GDB's adapter gives the
    same for the same DWARF."""
    if spec is None or not spec.IsValid():
        return None
    path = spec.fullpath
    return os.path.normpath(path) if path else None


def _line_of(entry: "lldb.SBLineEntry") -> Optional[Tuple[str, Optional[int]]]:
    if entry is None or not entry.IsValid():
        return None
    name = _file_name(entry.GetFileSpec())
    return (name, entry.GetLine() or None) if name else None


def function_name(function: "lldb.SBFunction") -> Optional[str]:
    """A function's name as GDB gives it: for C, the linkage name where DWARF has one
    (glibc's ``__GI_raise`` for ``raise``); C++ names demangled."""
    if function is None or not function.IsValid():
        return None
    linkage = function.GetMangledName()
    if linkage and not linkage.startswith("_Z"):
        return linkage
    return function.GetName()


def _address(target: "lldb.SBTarget", address: int) -> "lldb.SBAddress":
    """``target.ResolveLoadAddress(address)``; an invalid SBAddress for a value outside
    64 bits (pc - 1 of a zero pc), which LLDB's API would raise OverflowError for."""
    if not 0 <= address < 1 << 64:
        return lldb.SBAddress()
    return target.ResolveLoadAddress(address)


def _load_address(address: "lldb.SBAddress", target: "lldb.SBTarget") -> Optional[int]:
    load = address.GetLoadAddress(target)
    return load if load != lldb.LLDB_INVALID_ADDRESS else None


class InputFrame(Frame):
    """One of LLDB's own frames as the walk reads it: its pc and sp as LLDB lists them
    (a provider's input frames included), its registers, its CFA."""

    def __init__(self, level: int, sbframe: "lldb.SBFrame"):
        self._level = level
        self.sbframe = sbframe

    @property
    def level(self) -> int:
        return self._level

    def pc(self) -> int:
        return self.sbframe.GetPC()

    def sp(self) -> Optional[int]:
        sp = self.sbframe.GetSP()
        return sp if sp not in (0, lldb.LLDB_INVALID_ADDRESS) else None

    def register(self, name: str) -> Optional[int]:
        return _unsigned(self.sbframe.FindRegister(name))

    def cfa(self) -> Optional[int]:
        cfa = self.sbframe.GetCFA()
        return cfa if cfa not in (0, lldb.LLDB_INVALID_ADDRESS) else None

    def is_artificial(self) -> bool:
        return self.sbframe.IsArtificial()


def walk_thread(cache: StopCache, sbframes, past_native_end: bool = False) -> List[Step]:
    """The walk of a thread whose LLDB frames are ``sbframes``, innermost first."""
    inputs = [InputFrame(level, sbframe) for level, sbframe in enumerate(sbframes)]
    target = cache.process.target
    return ThreadWalk(cache, inputs, past_native_end=past_native_end, log=debug_log,
                      call_site_at=lambda address: _call_site_at(target, address)).run()


def _call_site_at(target: "lldb.SBTarget", address: int) -> bool:
    """Code at ``address`` is a function's own, one with debug information: LLDB reads
    tail calls only from such a function's call sites (stack/tail_calls.py), never
    from inlined code's or from a function without DWARF."""
    resolved = _address(target, address)
    if not resolved.GetFunction().IsValid():
        return False
    block = resolved.GetBlock()
    return not (block.IsValid() and block.GetContainingInlinedBlock().IsValid())


class LldbFrame(Frame):
    """One frame of the thread (``record``, the core's ``walk_frames``): an LLDB frame
    (``sbframe``), or one the walk found (its step's pc, sp and registers, and the name
    and source LLDB's symbols give at pc - 1)."""

    def __init__(self, level: int, record: WalkFrame, sbframe=None, frames=None):
        self._level = level
        self.record = record
        self.step = record.step
        self.sbframe = sbframe
        self._frames = frames  # the thread's list, for older()

    @property
    def level(self) -> int:
        return self._level

    def pc(self) -> int:
        if self.sbframe is None:
            if self.step.pc is None:
                raise DebuggerError("PC not available")
            return self.step.pc
        # The concrete frame's pc: LLDB gives a frame holding inlined code the start of
        # the inlined block; GDB (and the registers) the return address.  A tail-call
        # frame LLDB made from call-site information has its own pc and no registers.
        pc = None if self.sbframe.IsArtificial() else _unsigned(
            self.sbframe.FindRegister("pc"))  # LLDB's generic name: rip, aarch64's pc
        if pc is None:
            pc = self.sbframe.GetPC()
        if pc in (None, lldb.LLDB_INVALID_ADDRESS):
            raise DebuggerError("PC not available")
        return pc

    def sp(self) -> Optional[int]:
        if self.sbframe is None:
            return self.step.sp
        sp = self.sbframe.GetSP()
        return sp if sp not in (0, lldb.LLDB_INVALID_ADDRESS) else None

    def function_name(self) -> Optional[str]:
        if self.sbframe is None:
            return self.record.name
        if not self.sbframe.IsInlined():
            name = function_name(self.sbframe.GetFunction())
            if name:
                return name
        return self.sbframe.GetFunctionName() or None

    def source(self):
        if self.sbframe is None:
            return self.record.source
        return _line_of(self.sbframe.GetLineEntry())

    def register(self, name: str) -> Optional[int]:
        if self.sbframe is None:
            return self.step.registers.get(name)
        return _unsigned(self.sbframe.FindRegister(name))

    def interpreter_frame(self) -> Optional[int]:
        if self.sbframe is None:
            return None
        return _unsigned(self.sbframe.FindVariable("frame")) or None

    def older(self) -> Optional[Frame]:
        if ends_backtrace(self.function_name()):
            return None
        frames = self._frames or []
        index = self._level + 1
        return frames[index] if index < len(frames) else None

    def stop_reason(self) -> str:
        return self.record.end_reason


def _inline_chain(target: "lldb.SBTarget", pc: int):
    """(symbol context at ``pc - 1``, [(block, file spec, line, column)]): the blocks of
    the functions at return address ``pc`` (looked up at ``pc - 1``, as LLDB does for its
    own callers), the innermost inlined function first, each with its line there."""
    address = _address(target, pc - 1)
    found = target.ResolveSymbolContextForAddress(address, lldb.eSymbolContextEverything)
    block = found.GetBlock()
    inlined = block.GetContainingInlinedBlock() if block.IsValid() else None
    entry = found.GetLineEntry()
    where = (entry.GetFileSpec(), entry.GetLine(), entry.GetColumn()) \
        if entry.IsValid() else (None, 0, 0)
    chain = []
    while inlined is not None and inlined.IsValid() and len(chain) < MAX_INLINE_DEPTH:
        chain.append((inlined, *where))
        where = (inlined.GetInlinedCallSiteFile(), inlined.GetInlinedCallSiteLine(),
                 inlined.GetInlinedCallSiteColumn())
        parent = inlined.GetParent()
        inlined = parent.GetContainingInlinedBlock() if parent.IsValid() else None
    function = found.GetFunction()
    chain.append((function.GetBlock() if function.IsValid() else block, *where))
    return found, chain


def return_address_frames(target: "lldb.SBTarget", pc: int) -> List["lldb.SBSymbolContext"]:
    """The symbol contexts LLDB gives its own frames at return address ``pc``: one per
    function there, the innermost inlined function first, each with its block and line."""
    found, chain = _inline_chain(target, pc)
    contexts = []
    for block, spec, line, column in chain:
        context = lldb.SBSymbolContext()
        context.SetModule(found.GetModule())
        context.SetCompileUnit(found.GetCompileUnit())
        context.SetFunction(found.GetFunction())
        context.SetSymbol(found.GetSymbol())
        if block.IsValid():
            context.SetBlock(block)
        if spec is not None and spec.IsValid():
            entry = lldb.SBLineEntry()
            entry.SetFileSpec(spec)
            entry.SetLine(line)
            entry.SetColumn(column)
            context.SetLineEntry(entry)
        contexts.append(context)
    return contexts


def symbolised_alike(target: "lldb.SBTarget", pc: int) -> bool:
    """LLDB shows a frame at return address ``pc`` looked up at ``pc`` itself as it
    shows its own caller there (looked up at ``pc - 1``): same function, no inlined
    function, same line (the column may be the return address's).  Such a frame can be
    a ``{"pc": ...}`` dictionary, which costs LLDB less than a ScriptedFrame (a stack of
    2,000 frameless toy JIT frames: 2.6 s against 4 s)."""
    def where(address):
        found = target.ResolveSymbolContextForAddress(
            _address(target, address), lldb.eSymbolContextEverything)
        block = found.GetBlock()
        if block.IsValid() and block.GetContainingInlinedBlock().IsValid():
            return None
        start = found.GetSymbol().GetStartAddress().GetLoadAddress(target) \
            if found.GetSymbol().IsValid() else None
        entry = found.GetLineEntry()
        line = (_file_name(entry.GetFileSpec()), entry.GetLine()) \
            if entry.IsValid() else None
        return start, line
    before = where(pc - 1)
    return before is not None and before[0] is not None and before == where(pc)


def _symbolised(target: "lldb.SBTarget", pc: int) -> List[Tuple[Optional[str], object]]:
    """(name, (file, line) or None) of the functions at return address ``pc``, the
    innermost inlined function first, as LLDB lists its own frames."""
    found, chain = _inline_chain(target, pc)
    symbol = found.GetSymbol()
    outer = function_name(found.GetFunction()) or (
        symbol.GetName() if symbol.IsValid() else None)
    result = []
    for block, spec, line, _column in chain:
        name = block.GetInlinedName() if block.IsValid() else None
        file_name = _file_name(spec)
        result.append((name or outer, (file_name, line or None) if file_name else None))
    return result


def build_frames(target, steps: List[Step], sbframe_of) -> List[LldbFrame]:
    """The thread's frames from its walk: ``sbframe_of(step)`` is the LLDB frame of an
    input step."""
    frames: List[LldbFrame] = []
    for record in walk_frames(steps, lambda pc: _symbolised(target, pc)):
        sbframe = sbframe_of(record.step) if record.step.index is not None else None
        frames.append(LldbFrame(len(frames), record, sbframe, frames))
    return frames


class LldbThread(Thread):
    def __init__(self, process: "LldbProcess", thread: "lldb.SBThread"):
        self.process = process
        self.inner = thread
        self.number = thread.GetIndexID()
        self.native_id = thread.GetThreadID()
        # A core file has no thread names (LLDB shows the process's for every thread),
        # and GDB shows none there.
        self.name = None if process.connection() in ("core", "minidump") else (
            thread.GetName() or None)

    def frames(self, cache: StopCache) -> List[LldbFrame]:
        providers = hasattr(lldb.SBTarget, "RegisterScriptedFrameProvider")

        def inputs():
            count = min(self.inner.GetNumFrames(), MAX_FRAMES)
            return [self.inner.GetFrameAtIndex(i) for i in range(count)]

        steps, direct = thread_steps(
            cache, self.native_id, self.inner.GetNumFrames if providers else None,
            self.inner.GetNumFrames,
            lambda: walk_thread(cache, inputs(), past_native_end=not providers))

        def sbframe_of(step):
            return self.inner.GetFrameAtIndex(step.index if direct else step.position)

        return build_frames(self.process.target, steps, sbframe_of)

    def newest_frame(self) -> Frame:
        try:
            frames = self.frames(self.process.cache)
        except JitUnwindError as error:  # memory the walk needed, a frame LLDB refused
            raise DebuggerError(f"cannot list the frames: {error}") from None
        if not frames:
            raise DebuggerError("No stack.")
        return frames[0]


def _architecture(target):
    """The target's architecture from its triple (x86-64 when LLDB names another)."""
    from ..arch import X86_64, by_debugger_name
    triple = target.GetTriple() or ""  # None for an invalid target
    return by_debugger_name(triple.split("-", 1)[0]) or X86_64


class LldbProcess(Process):
    """One LLDB process (live, a core file, a minidump or remote)."""

    debugger_name = "LLDB"

    def __init__(self, process: "lldb.SBProcess"):
        self.inner = process
        self.target = process.GetTarget()
        self.memory = LldbMemory(process)
        self._offsets: Dict[Tuple[str, str], Optional[int]] = {}

    @property
    def cache(self) -> StopCache:
        """The process's StopCache, emptied first when LLDB's process has moved on to
        another stop since (LLDB rebuilds frames at every stop, its own included)."""
        cache = self._stop_cache
        cache.check_process()
        return cache

    @cache.setter
    def cache(self, cache: StopCache) -> None:
        self._stop_cache = cache

    @property
    def arch(self):
        """The architecture of the process's target now (asked each walk: this object
        may outlive the target it was made for)."""
        return _architecture(self.inner.GetTarget())

    def pid(self) -> Optional[int]:
        if not self.inner.IsValid():
            return None
        pid = self.inner.GetProcessID()
        return pid if pid not in (0, lldb.LLDB_INVALID_PROCESS_ID) else None

    def key(self) -> tuple:
        return self.inner.GetUniqueID(), self.inner.GetStopID()

    def connection(self) -> str:
        plugin = self.inner.GetPluginName()
        if plugin == "elf-core":
            return "core"
        if plugin == "minidump":
            return "minidump"
        if plugin == "gdb-remote":
            pid = self.pid()
            platform = self.target.GetPlatform()
            local = platform.IsValid() and platform.GetName() == "host"
            if local and pid is not None and os.path.exists(f"/proc/{pid}/maps"):
                return "native"
        return "remote"

    def has_executable(self) -> bool:
        # The target's first module, ours (the JIT symbol file, which LLDB then also
        # reports as GetExecutable()) aside; for a core whose executable is gone LLDB
        # keeps a module read from the core's memory, under a path with no file.
        for index in range(min(self.target.GetNumModules(), 4)):
            module = self.target.GetModuleAtIndex(index)
            if not is_own_module(self.target, module):
                return os.path.exists(module.GetFileSpec().fullpath or "")
        return False

    def core_file(self) -> Optional[str]:
        if self.inner.GetPluginName() != "elf-core":
            return None
        spec = self.inner.GetCoreFile()
        return spec.fullpath if spec is not None and spec.IsValid() else None

    def minidump_file(self) -> Optional[str]:
        """The minidump loaded (to tell what memory it holds), None for anything else."""
        if self.inner.GetPluginName() != "minidump":
            return None
        spec = self.inner.GetCoreFile()
        return spec.fullpath if spec is not None and spec.IsValid() else None

    def debugger_mappings(self) -> List[Mapping]:
        """LLDB's memory region list; a minidump's from its copy of the process's
        /proc/PID/maps, which has the file offsets LLDB's list leaves out."""
        if self.inner.GetPluginName() == "minidump":
            spec = self.inner.GetCoreFile()
            found = minidump_maps(spec.fullpath) if spec is not None and spec.IsValid() \
                and spec.fullpath else None
            if found:
                return found
        regions = self.inner.GetMemoryRegions()
        mappings = []
        for index in range(min(regions.GetSize(), MAX_REGIONS)):
            info = lldb.SBMemoryRegionInfo()
            if not regions.GetMemoryRegionAtIndex(index, info) or not info.IsMapped():
                continue
            perms = (("r" if info.IsReadable() else "-") + ("w" if info.IsWritable() else "-")
                     + ("x" if info.IsExecutable() else "-") + "p")
            mappings.append(Mapping(info.GetRegionBase(), info.GetRegionEnd(), perms,
                                    info.GetName() or ""))
        return mappings

    def module_paths(self) -> List[str]:
        return [module.GetFileSpec().fullpath or "" for module in self.target.module_iter()]

    def threads(self) -> List[Thread]:
        threads = [LldbThread(self, thread) for thread in self.inner]
        return sorted(threads, key=lambda thread: thread.number)

    def selected_thread(self) -> Optional[Thread]:
        thread = self.inner.GetSelectedThread()
        return LldbThread(self, thread) if thread.IsValid() else None

    def symbol_address(self, name: str) -> Optional[int]:
        for context in self.target.FindSymbols(name):
            symbol = context.GetSymbol()
            if symbol.IsValid():
                address = symbol.GetStartAddress().GetLoadAddress(self.target)
                if address != lldb.LLDB_INVALID_ADDRESS:
                    return address
        for value in self.target.FindGlobalVariables(name, 1):
            address = value.GetLoadAddress()
            if address != lldb.LLDB_INVALID_ADDRESS:
                return address
        return None

    def member_offset(self, type_name: str, member_path: str) -> Optional[int]:
        key = (type_name, member_path)
        if key not in self._offsets:  # a type's layout does not change: once per process
            self._offsets[key] = self._member_offset(type_name, member_path)
        return self._offsets[key]

    def _member_offset(self, type_name: str, member_path: str) -> Optional[int]:
        current = self.target.FindFirstType(type_name)
        if not current.IsValid():
            return None
        offset = 0
        for member in member_path.split("."):
            current = current.GetCanonicalType()
            field = next((current.GetFieldAtIndex(i)
                          for i in range(current.GetNumberOfFields())
                          if current.GetFieldAtIndex(i).GetName() == member), None)
            if field is None or not field.IsValid():
                return None
            offset += field.GetOffsetInBytes()
            current = field.GetType()
        return offset

    def function_start(self, address: int) -> Optional[int]:
        symbol = _address(self.target, address).GetSymbol()
        if not symbol.IsValid():
            return None
        start = symbol.GetStartAddress().GetLoadAddress(self.target)
        return start if start != lldb.LLDB_INVALID_ADDRESS else None

    def symbol_at(self, address: int) -> Optional[Symbol]:
        symbol = _address(self.target, address).GetSymbol()
        if not symbol.IsValid():
            return None
        return Symbol(symbol.GetName() or "",
                      _load_address(symbol.GetStartAddress(), self.target),
                      _load_address(symbol.GetEndAddress(), self.target))

    def file_address(self, address: int) -> Optional[Tuple[str, int]]:
        found = _address(self.target, address)
        module = found.GetModule()
        if not module.IsValid():
            return None
        path = module.GetFileSpec().fullpath
        file_address = found.GetFileAddress()
        if not path or file_address == lldb.LLDB_INVALID_ADDRESS:
            return None
        return path, file_address

    @contextlib.contextmanager
    def keep_selection(self):
        thread = self.inner.GetSelectedThread()
        thread_id = thread.GetThreadID() if thread.IsValid() else None
        frame = thread.GetSelectedFrame().GetFrameID() if thread.IsValid() else None
        try:
            yield
        finally:
            if thread_id is not None:
                self.inner.SetSelectedThreadByID(thread_id)
                thread = self.inner.GetThreadByID(thread_id)
                if thread.IsValid() and frame is not None:
                    thread.SetSelectedFrame(frame)

    def warn(self, text: str) -> None:
        print(f"warning: {text}", file=sys.stderr)
