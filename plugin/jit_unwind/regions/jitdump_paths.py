"""Where a process's perf jitdump may be (``jit-PID.dump``), without reading one: the
check a stop makes (:func:`may_have_jitdump`) imports nothing more, where the reader
(jitdump.py) costs a session ~10 ms of imports (dataclasses, inspect) that most never
need."""

import os
from typing import Iterable, List, Optional

# A path given by the user (GDB: ``set jit-unwind jitdump PATH``), tried first.
_user_path: Optional[str] = None


def set_user_path(path: Optional[str]) -> None:
    global _user_path
    _user_path = os.path.expanduser(path) if path else None


def user_path() -> Optional[str]:
    return _user_path


def dump_name(pid: int) -> str:
    return f"jit-{pid}.dump"


def may_have_jitdump(pid: int, mapped_paths: Iterable[str]) -> bool:
    """Cheap, at a stop: whether ``pid`` may have a jitdump (the user named one, the
    process maps one, as writers do so that perf notices it, or /tmp has one by its
    name).  :func:`find_jitdump` decides; this only spares the other processes that."""
    name = dump_name(pid)
    return (_user_path is not None
            or any(os.path.basename(path) == name for path in mapped_paths)
            or os.path.exists(os.path.join("/tmp", name)))


def candidate_paths(pid: int, mapped_paths: Iterable[str] = (), cwd: Optional[str] = None
                    ) -> List[str]:
    """Where the jitdump of ``pid`` may be, most certain first: the user's path, a file
    of that name the process maps (writers map their dump so perf finds it), /tmp (CPython),
    the process's working directory (V8), perf's copies under ~/.debug/jit."""
    name = dump_name(pid)
    paths = []
    if _user_path:
        paths.append(_user_path)
    paths += [path for path in mapped_paths if os.path.basename(path) == name]
    paths.append(os.path.join("/tmp", name))
    if cwd:
        paths.append(os.path.join(cwd, name))
    debug_jit = os.path.expanduser("~/.debug/jit")
    try:
        entries = sorted(os.scandir(debug_jit), key=lambda e: e.name, reverse=True)[:256]
        paths += [os.path.join(entry.path, name) for entry in entries]
    except OSError:
        pass
    unique = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    return unique
