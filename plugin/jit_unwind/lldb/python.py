"""The CPython runtime of an LLDB process and the mixed native + Python stack."""

import os
from typing import Dict, List, Optional, Tuple

import lldb

from ..cpython import CPythonError, CPythonRuntime, find_runtime, version_from_library_name
from ..elf_lookup import section_address, symbol_address
from ..frames import EVAL, EVAL_FUNCTION, JIT, OTHER, NativeFrame
from ..mixed import MixedThread, mix
from .jitdump import add_jitdump_regions
from .memory import LldbMemory
from .registration import providers_supported
from .state import region_map
from .walk import Frame, ThreadWalk

MAX_FRAMES = 100_000
STOPPED = "[unwind stopped: "

# (process unique id, stop id) -> (runtime or None, reason)
_runtimes: Dict[Tuple[int, int], Tuple[Optional[CPythonRuntime], str]] = {}


def lookup_symbol(target: "lldb.SBTarget", process: "lldb.SBProcess", name: str) -> Optional[int]:
    """A global's load address: LLDB's symbols, else the mapped files' symbol tables
    (and ``.PyRuntime`` of a stripped interpreter)."""
    for context in target.FindSymbols(name):
        symbol = context.GetSymbol()
        if symbol.IsValid():
            address = symbol.GetStartAddress().GetLoadAddress(target)
            if address != lldb.LLDB_INVALID_ADDRESS:
                return address
    mappings = region_map(process)[0].mappings
    address = symbol_address(mappings, name)
    if address is None and name == "_PyRuntime":
        address = section_address(mappings, ".PyRuntime")
    return address


def _version_hint(target: "lldb.SBTarget"):
    for module in target.module_iter():
        version = version_from_library_name(module.GetFileSpec().GetFilename() or "")
        if version is not None:
            return version
    return None


def python_runtime(target, process) -> Tuple[Optional[CPythonRuntime], str]:
    key = (process.GetUniqueID(), process.GetStopID())
    if key not in _runtimes:
        _runtimes.clear()
        try:
            runtime = find_runtime(LldbMemory(process),
                                   lambda name: lookup_symbol(target, process, name),
                                   _version_hint(target))
            _runtimes[key] = (runtime, "")
        except CPythonError as error:
            _runtimes[key] = (None, str(error))
        except Exception as error:  # never a traceback
            _runtimes[key] = (None, f"cannot read the CPython runtime: {error}")
    return _runtimes[key]


def is_python_process(target) -> bool:
    return any("python" in os.path.basename(m.GetFileSpec().GetFilename() or "")
               for m in target.module_iter())


def _interpreter_frame(frame: "lldb.SBFrame") -> Optional[int]:
    value = frame.FindVariable("frame")
    if not value.IsValid():
        return None
    error = lldb.SBError()
    number = value.GetValueAsUnsigned(error, 0)
    return number if error.Success() and number else None


def _native_frame(level: int, pc: int, name: str, regions, line_entry,
                  interpreter_frame=None) -> NativeFrame:
    kind, code_object = OTHER, None
    if name == EVAL_FUNCTION:
        kind = EVAL
    elif pc and regions.jit_region_at(pc if level == 0 else pc - 1) is not None:
        kind = JIT
        symbol = regions.symbol_at(pc if level == 0 else pc - 1)
        code_object = symbol.owner if symbol is not None else None
    filename = line = None
    if line_entry.IsValid() and line_entry.GetFileSpec().IsValid():
        filename = line_entry.GetFileSpec().fullpath
        line = line_entry.GetLine() or None
    return NativeFrame(level, kind=kind, pc=pc, name=name or None, filename=filename,
                       line=line,
                       interpreter_frame=interpreter_frame if kind == EVAL else None,
                       code_object=code_object)


def _split_reason(name: str) -> Tuple[str, str]:
    """A frame's name and the reason a walk ended on it ("" when it did not)."""
    if STOPPED not in name:
        return name, ""
    name, _, rest = name.partition(STOPPED)
    return name.strip(), rest.rstrip("]").strip()


def _from_sbframe(frame: "lldb.SBFrame", level: int, regions):
    """(NativeFrame or None for a bare note, why the walk ended here or "")."""
    pc = frame.GetPC()
    name, reason = _split_reason(frame.GetFunctionName() or frame.GetDisplayFunctionName()
                                 or "")
    if pc == lldb.LLDB_INVALID_ADDRESS:
        if not name:
            return None, reason
        pc = 0
    interpreter_frame = _interpreter_frame(frame) if name == EVAL_FUNCTION else None
    return _native_frame(level, pc, name, regions, frame.GetLineEntry(),
                         interpreter_frame), reason


def native_frames(thread: "lldb.SBThread", regions) -> Tuple[List[NativeFrame], str]:
    """The thread's frames as ``bt`` shows them with the frame provider, and why the walk
    ended early ("" when it reached the end).  Without frame providers (LLDB 19), the
    same walk runs here over LLDB's own frames."""
    count = min(thread.GetNumFrames(), MAX_FRAMES)
    inputs = [thread.GetFrameAtIndex(level) for level in range(count)]
    if providers_supported() or not regions.has_jit():
        steps = [Frame(index=level) for level in range(count)]
    else:
        process = thread.GetProcess()
        target = process.GetTarget()
        add_runtime_regions(target, process, regions)
        steps = ThreadWalk(target, LldbMemory(process), regions, inputs,
                           past_native_end=True).run()
    frames: List[NativeFrame] = []
    reason = ""
    for step in steps:
        level = len(frames)
        if step.index is not None:
            native, reason = _from_sbframe(inputs[step.index], level, regions)
        elif step.pc is None:  # a note ending the walk
            native, reason = None, _split_reason(step.name or "")[1]
        elif step.name is not None:  # a JIT frame
            name, reason = _split_reason(step.name)
            native = _native_frame(level, step.pc, name, regions, lldb.SBLineEntry())
        else:  # a native frame the walk found: named at its call, pc - 1
            target = thread.GetProcess().GetTarget()
            context = target.ResolveSymbolContextForAddress(
                target.ResolveLoadAddress(step.pc - 1), lldb.eSymbolContextEverything)
            function, symbol = context.GetFunction(), context.GetSymbol()
            name = (function.GetName() if function.IsValid() else None) or (
                symbol.GetName() if symbol.IsValid() else "") or ""
            native = _native_frame(level, step.pc, name, regions, context.GetLineEntry())
        if native is not None:
            native.stop_reason = reason  # marked as bt marks it, after the name
            frames.append(native)
    return frames, reason


def mixed_threads(target, process, runtime, threads, python_only: bool,
                  names) -> List[MixedThread]:
    regions = region_map(process)[0]
    result = []
    for thread in threads:
        try:
            python = runtime.thread_by_native_id(thread.GetThreadID())
        except Exception:  # unreadable runtime structures: native frames only
            python = None
        mixed = MixedThread(thread.GetIndexID(), thread.GetThreadID(), thread.GetName(),
                            python, names.get(python.thread_id) if python else None)
        if not python_only:
            natives, mixed.stop_reason = native_frames(thread, regions)
            mixed.frames = mix(natives, python)
        result.append(mixed)
    return result


def add_runtime_regions(target, process, regions) -> None:
    """Name the JIT code of CPython's executors (3.13+) in ``regions``, once per map:
    shims and traces, as GDB's frame filter names them; and the JIT code a perf jitdump
    describes."""
    add_jitdump_regions(process, regions)
    if regions.memo.get("lldb-runtime-regions") or not is_python_process(target):
        return
    regions.memo["lldb-runtime-regions"] = True
    runtime, _reason = python_runtime(target, process)
    if runtime is None or runtime.version.minor_version < (3, 13):
        return
    from ..cpython.executors import read_executors
    from ..regions.cpython_jit import executor_regions
    try:
        executors = read_executors(LldbMemory(process), runtime, None,
                                   lambda name: lookup_symbol(target, process, name))
    except CPythonError:
        return
    regions.add_symbols(executor_regions(executors))
