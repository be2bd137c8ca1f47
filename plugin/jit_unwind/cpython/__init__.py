"""The CPython runtime of a stopped process, read from raw memory (no debugger, no DWARF).

Give :func:`find_runtime` a :class:`~jit_unwind.target.Memory` and a symbol lookup
(``name -> address or None``, for ``_PyRuntime`` and ``Py_Version``); the returned
:class:`CPythonRuntime` lists interpreters, threads (:class:`PyThread`) and their Python
frames (:class:`PyFrame`: function, file, line, entry-frame flag).  Supports CPython 3.11
to 3.15 on x86-64 Linux (GIL builds; free-threaded ones from 3.13t on, read through the
same ``_Py_DebugOffsets``); anything else raises an :class:`CPythonError`
whose message is meant to be shown as is.

Modules: :mod:`.version` (``PY_VERSION_HEX``), :mod:`.layout` (offset tables, 3.11/3.12),
:mod:`.debug_offsets` (3.13+'s ``_Py_DebugOffsets``), :mod:`.objects` (strings, bytes),
:mod:`.linetable` (``co_linetable``), :mod:`.code` (code objects), :mod:`.runtime` (the
walk), :mod:`.model` (the results).  None of them imports a debugger.
"""

from .errors import (CPythonError, LayoutError, ObjectError, RuntimeNotFoundError,
                     UnsupportedVersionError)
from ..model import PyFrame, PyInterpreter, PyThread
from .runtime import (MAX_FRAMES, CPythonRuntime, SymbolLookup, find_runtime,
                      read_py_version, read_python_threads)
from .version import PyVersion, version_from_library_name

__all__ = [
    "CPythonError", "LayoutError", "ObjectError", "RuntimeNotFoundError",
    "UnsupportedVersionError", "PyFrame", "PyInterpreter", "PyThread", "MAX_FRAMES",
    "CPythonRuntime", "SymbolLookup", "find_runtime", "read_py_version",
    "read_python_threads", "PyVersion", "version_from_library_name",
]
