"""The CPython runtime of the selected inferior, found once per stop through GDB."""

import os
from typing import Optional, Tuple

import gdb

from ..cpython import CPythonError, CPythonRuntime, find_runtime, version_from_library_name
from ..cpython.executors import DWARF_FIELDS, executor_layout, read_executors
from ..elf_lookup import have_pyelftools, section_address, symbol_address
from ..regions.cpython_jit import executor_regions
from .discovery import WITHOUT_PYELFTOOLS, missing, warn_missing
from .memory import GdbMemory
from .state import STATE


def lookup_symbol(name: str, debug_info: bool = True) -> Optional[int]:
    """Address of a global of the inferior: the mapped files' symbol tables, else (for
    ``_PyRuntime`` of a stripped interpreter) its ``.PyRuntime`` section, else GDB's debug
    info (separate debug files; slow for a name the program lacks, as GDB then searches
    all of it, so ``debug_info=False`` skips it).  Never evaluates an expression: this runs
    inside the unwinder too, where evaluating may need the frame being unwound."""
    key = f"symbol:{name}:{debug_info}"
    if key in STATE.cache:
        return STATE.cache[key]
    mappings = STATE.regions().mappings
    address = symbol_address(mappings, name)
    if address is None and name == "_PyRuntime":
        address = section_address(mappings, ".PyRuntime")
    if address is None and debug_info:
        address = _debug_info_address(name)
        if address is None:  # no debug info either: the symbol tables, parsed in full
            address = symbol_address(mappings, name, full_tables=True)
    if address is None and not have_pyelftools():
        warn_missing("pyelftools", WITHOUT_PYELFTOOLS)
    STATE.cache[key] = address
    return address


def _debug_info_address(name: str) -> Optional[int]:
    for finder in (gdb.lookup_global_symbol, gdb.lookup_static_symbol):
        try:
            symbol = finder(name)
            # Not only is_variable: GDB may class a global like _PyRuntime otherwise,
            # and any symbol whose value has an address will do.
            address = symbol.value().address if symbol is not None else None
            if address is not None:
                return int(address)
        except (gdb.error, ValueError):
            pass
    return None


def _version_hint():
    """major.minor from the interpreter's file names (libpython3.10.so, python3.10): lets
    the error for CPython 3.10 and older name the version."""
    for objfile in gdb.objfiles():
        version = version_from_library_name(objfile.filename or "")
        if version is not None:
            return version
    return None


def python_runtime() -> Tuple[Optional[CPythonRuntime], str]:
    """The runtime, or None and a one-line reason (cached until the next stop)."""
    STATE.check_inferior()
    cached = STATE.cache.get("python-runtime")
    if cached is not None:
        return cached
    if gdb.selected_inferior().pid <= 0:
        result = (None, "no process: run a program or load a core file first")
    else:
        try:
            result = (find_runtime(GdbMemory(), lookup_symbol, _version_hint()), "")
        except CPythonError as error:
            result = (None, str(error))
            if not have_pyelftools() and lookup_symbol("_PyRuntime") is None:
                result = (None, missing("pyelftools", WITHOUT_PYELFTOOLS))
        except Exception as error:  # never let a Python problem break a backtrace
            result = (None, f"cannot read the CPython runtime: {error}")
    STATE.cache["python-runtime"] = result
    return result


def is_python_process() -> bool:
    """Cheap test used on every backtrace: does the program have a CPython runtime?"""
    STATE.check_inferior()
    cached = STATE.cache.get("has-python")
    if cached is None:
        # Only files named like CPython (python3.12, libpython3.12.so) are opened: this
        # runs at the first bt of every program, and most programs are not Python.
        # CPython exports _PyRuntime (or keeps its .PyRuntime section) in every build.
        cached = (any("python" in os.path.basename(m.path) for m in STATE.regions().mappings)
                  and lookup_symbol("_PyRuntime", debug_info=False) is not None)
        STATE.cache["has-python"] = cached
    return cached


def thread_lwp(thread) -> int:
    """The kernel thread id GDB's thread runs on (CPython's native_thread_id)."""
    pid, lwp, _tid = thread.ptid
    return lwp or pid


def jit_code_regions():
    """Named regions of the runtime's JIT code (CPython's executors), once per stop."""
    cached = STATE.cache.get("runtime-jit-regions")
    if cached is None:
        cached = []
        runtime, _reason = python_runtime()
        if runtime is not None and runtime.version.minor_version >= (3, 13):
            try:
                executors = read_executors(GdbMemory(), runtime, _dwarf_executor_layout(runtime),
                                           lookup_symbol)
                cached = executor_regions(executors)
            except CPythonError:
                cached = []
        STATE.cache["runtime-jit-regions"] = cached
    return cached


def _dwarf_executor_layout(runtime):
    """Executor offsets from the interpreter's DWARF when it has them, else None (the
    built-in table for the version is used)."""
    offsets = {}
    for field, (type_name, member) in DWARF_FIELDS.items():
        offset = dwarf_offset(type_name, member)
        if offset is None:
            return None if not offsets else _with(runtime, offsets)
        offsets[field] = offset
    return _with(runtime, offsets)


def _with(runtime, offsets):
    try:
        return executor_layout(runtime.version).with_offsets("DWARF", **offsets)
    except CPythonError:
        return None


def dwarf_offset(type_name: str, member_path: str):
    """Byte offset of ``a.b.c`` inside struct ``type_name`` from DWARF, None without."""
    try:
        current = gdb.lookup_type(type_name).strip_typedefs()
    except gdb.error:
        return None
    offset = 0
    for member in member_path.split("."):
        fields = {f.name: f for f in current.fields()} if current.code == gdb.TYPE_CODE_STRUCT else {}
        field = fields.get(member)
        if field is None or not hasattr(field, "bitpos"):
            return None
        offset += field.bitpos // 8
        current = field.type.strip_typedefs()
    return offset
