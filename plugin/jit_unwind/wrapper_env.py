"""The environment a pip-installed debugger's wrapper gives its own Python, kept out of
the program the debugger runs.

gdb-for-pwndbg's ``gdb`` and lldb-for-pwndbg's ``lldb`` are Python scripts that start the
real debugger with ``PYTHONHOME=PREFIX:EXEC_PREFIX`` and ``PYTHONPATH`` (the wrapper's
``sys.path``) of the virtualenv they are installed in, ``PYTHONNOUSERSITE=1`` and (LLDB)
``PYTHONLOADER_LIBPYTHON``.  The debugger passes its environment on to the program it
runs: a CPython of another version then loads the wrapper's standard library ("No module
named '_ctypes'")."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import Callable, Iterable, List, Mapping, Optional

# Set by the wrappers besides PYTHONHOME, always together with it.
_WITH_HOME = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONLOADER_LIBPYTHON")


def wrapper_variables(environ: Mapping[str, str], prefixes: Iterable[str],
                      debugger_files: str,
                      program_value: Optional[Callable[[str], Optional[str]]] = None
                      ) -> List[str]:
    """The names of ``environ``'s variables a wrapper set for the debugger's own Python,
    in the order to report them; [] when none.  ``program_value(name)``: the value the
    program would get now (the user may have set their own before the plugin loaded:
    GDB's "set environment"); a variable whose value is no longer the wrapper's is the
    user's and is left alone.

    The rule: PYTHONHOME names exactly the debugger's Python's ``prefixes`` (sys.prefix,
    sys.exec_prefix, as the wrappers write it) and the debugger's own files
    (``debugger_files``: GDB's data directory, LLDB's Python module) lie inside that
    prefix: the debugger was installed into that Python environment and pointed at it.
    A PYTHONHOME the user chose for their program names another directory (and would
    have broken the debugger's own Python, which reads it too).  The wrappers overwrite
    PYTHONPATH and PYTHONNOUSERSITE unconditionally, so when PYTHONHOME is theirs those
    are theirs as well: the user's own values were gone before the debugger started."""
    home = environ.get("PYTHONHOME")
    prefixes = [os.path.realpath(p) for p in prefixes if p]
    if not home or not prefixes:
        return []
    if {os.path.realpath(part) for part in home.split(":")} != set(prefixes):
        return []
    files = os.path.realpath(debugger_files)
    if not any(files.startswith(prefix.rstrip("/") + "/") for prefix in prefixes):
        return []
    names = ["PYTHONHOME"] + [name for name in _WITH_HOME if name in environ]
    if program_value is None:
        return names
    return [name for name in names if program_value(name) == environ[name]]


def announced() -> bool:
    """Whether to say it: in a session someone types into (stdin a terminal), not in
    scripted and batch runs, whose every output line is read (CPython's test_gdb fails
    on any line GDB writes to stderr)."""
    try:
        return os.isatty(0)
    except OSError:
        return False


def kept_out_message(names: List[str], debugger: str) -> str:
    """The one line saying what the program will not inherit, and why."""
    return (f"jit-unwind: programs run without {', '.join(names)}: {debugger}'s pip "
            f"wrapper set them for its own Python.")
