"""The CPython runtime of the selected inferior, found once per stop through GDB."""

from typing import Optional, Tuple

import gdb

from ..cpython import CPythonError, CPythonRuntime, find_runtime, version_from_library_name
from ..elf_lookup import section_address
from .memory import GdbMemory
from .state import STATE


def lookup_symbol(name: str) -> Optional[int]:
    """Address of a global of the inferior: debug info, else minimal symbols, else (for
    ``_PyRuntime`` of a stripped interpreter) its ``.PyRuntime`` section."""
    for finder in (gdb.lookup_global_symbol, gdb.lookup_static_symbol):
        try:
            symbol = finder(name)
        except gdb.error:
            symbol = None
        if symbol is not None and symbol.is_variable:
            try:
                return int(symbol.value().address)
            except gdb.error:
                pass
    try:
        return int(gdb.parse_and_eval(f"(unsigned long)&'{name}'"))
    except gdb.error:
        pass
    if name == "_PyRuntime":
        return section_address(STATE.regions().mappings, ".PyRuntime")
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
        except Exception as error:  # never let a Python problem break a backtrace
            result = (None, f"cannot read the CPython runtime: {error}")
    STATE.cache["python-runtime"] = result
    return result


def is_python_process() -> bool:
    """Cheap test used on every backtrace: does the program have a CPython runtime?"""
    STATE.check_inferior()
    cached = STATE.cache.get("has-python")
    if cached is None:
        cached = lookup_symbol("_PyRuntime") is not None
        STATE.cache["has-python"] = cached
    return cached


def thread_lwp(thread) -> int:
    """The kernel thread id GDB's thread runs on (CPython's native_thread_id)."""
    pid, lwp, _tid = thread.ptid
    return lwp or pid
