"""The CPython runtime of an LLDB process and the mixed native + Python stack."""

import os
from typing import Dict, List, Optional, Tuple

import lldb

from ..cpython import CPythonError, CPythonRuntime, find_runtime, version_from_library_name
from ..elf_lookup import section_address, symbol_address
from ..merge import EVAL, JIT, OTHER
from ..mixed import MixedThread, NativeFrame, mix
from .memory import LldbMemory
from .state import region_map

EVAL_FUNCTION = "_PyEval_EvalFrameDefault"
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


def native_frames(thread: "lldb.SBThread", regions) -> Tuple[List[NativeFrame], str]:
    """The thread's frames as ``bt`` shows them (the frame provider's), and why the walk
    ended early ("" when it reached the end)."""
    frames: List[NativeFrame] = []
    reason = ""
    for level in range(min(thread.GetNumFrames(), MAX_FRAMES)):
        frame = thread.GetFrameAtIndex(level)
        pc = frame.GetPC()
        name = frame.GetFunctionName() or frame.GetDisplayFunctionName() or ""
        if STOPPED in name:
            name, _, rest = name.partition(STOPPED)
            reason = rest.rstrip("]").strip()
            name = name.strip()
        kind, interpreter_frame, code_object = OTHER, None, None
        if name == EVAL_FUNCTION:
            kind, interpreter_frame = EVAL, _interpreter_frame(frame)
        elif pc != lldb.LLDB_INVALID_ADDRESS and regions.jit_region_at(
                pc if level == 0 else pc - 1) is not None:
            kind = JIT
            symbol = regions.symbol_at(pc if level == 0 else pc - 1)
            code_object = symbol.owner if symbol is not None else None
        if pc == lldb.LLDB_INVALID_ADDRESS:
            if not name:
                continue
            pc = 0
        line_entry = frame.GetLineEntry()
        filename = line = None
        if line_entry.IsValid() and line_entry.GetFileSpec().IsValid():
            filename = line_entry.GetFileSpec().fullpath
            line = line_entry.GetLine() or None
        frames.append(NativeFrame(len(frames), pc, name or f"{pc:#x}", kind, filename,
                                  line, interpreter_frame, code_object))
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
    shims and traces, as GDB's frame filter names them."""
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
