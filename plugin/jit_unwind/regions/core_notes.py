"""What the user should know about a core file before reading its stacks: it was cut
short (its memory is partly missing), or the debugger opened it without the program's
executable (the debugger then cannot unwind the native frames: it lists words of the
stack as frames, and Python frames must not be hung under those).  Each is said once per
core file when the plugin first sees it, and again by py-mixed-bt in its note."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import Callable, List, Optional, Tuple

from ..debugger import DebuggerError, Process
from ..file_cache import FileCache

_SAID: set = set()  # (core path, what) said once already
_SAID_LIMIT = 64

# How to open a core with its executable, per debugger.
_OPEN_WITH = {
    "GDB": "`file {exe}` (or start GDB as `gdb {exe} -c {core}`)",
    "LLDB": "`target create --core {core} {exe}`",
}


def missing_executable(process: Process) -> str:
    """The note for a core file opened without its executable, naming the one the core
    names (and whether it is there); "" for anything else."""
    # Cheapest first: bt asks at every stop (GDB 13's core_file() parses "info target").
    if process.connection() != "core" or process.has_executable():
        return ""
    core = process.core_file()
    if not core:
        return ""
    named = _named_executable(core)
    debugger = process.debugger_name
    how = _OPEN_WITH.get(debugger, _OPEN_WITH["GDB"])
    text = (f"the core file {core} was opened without its executable: {debugger} cannot "
            f"unwind its native frames, so no Python frame is placed among them")
    if named and os.path.isfile(named):
        return f"{text}; the core names {named}: load it with {how.format(exe=named, core=core)}"
    where = f"the core names {named}, which is not there" if named else \
        "the core does not name it"
    return (f"{text}; {where}: give the executable with "
            f"{how.format(exe='PATH', core=core)}")


# The executable each core names, read once per core file (bt asks at each stop).
_NAMED: FileCache[Optional[str]] = FileCache(limit=16)


def _named_executable(core: str) -> Optional[str]:
    from .corefile import core_executable
    return _NAMED.get(core, core_executable, None)


def truncation(process: Process, runtime_at: Callable[[], Optional[int]] = lambda: None,
               stacks: bool = True) -> Tuple[str, bool]:
    """For a truncated core file: (its size against what its program headers need and
    what is missing — the threads' stacks (``stacks``) and _PyRuntime (at
    ``runtime_at()``) when they lie in lost bytes; whether _PyRuntime does); ("", False)
    otherwise."""
    core = process.core_file()
    if not core:
        return "", False
    from .core_truncation import core_truncation, describe
    cut = core_truncation(core)
    if cut is None:
        return "", False
    places: List[Tuple[int, str, bool]] = []
    if stacks:
        try:
            for thread in process.threads()[:64]:  # bounded: a note, not a survey
                sp = thread.newest_frame().sp()
                if sp is not None:
                    places.append((sp, f"the stack of thread {thread.number}", True))
        except DebuggerError:  # the places are a bonus: the sizes alone still tell
            pass
    runtime = runtime_at()  # a look-up in the mapped files' tables: None, never an error
    if runtime is not None:
        places.append((runtime, "_PyRuntime", False))
    lost = runtime is not None and any(s.loses(runtime, False) for s in cut.cut)
    return describe(cut, places), lost


def say_once(process: Process) -> None:
    """Warn (once per core file) that the core is truncated or lacks its executable:
    cheap checks (the core's headers, the debugger's executable), for the first time
    the plugin looks at a core."""
    core = process.core_file()
    if not core:
        return
    for what, text in (("truncated", lambda: truncation(process, stacks=False)[0]),
                       ("executable", lambda: missing_executable(process))):
        if (core, what) in _SAID:
            continue
        if len(_SAID) >= _SAID_LIMIT:
            _SAID.clear()
        _SAID.add((core, what))
        message = text()
        if message:
            process.warn(f"jit-unwind: {message}.")
