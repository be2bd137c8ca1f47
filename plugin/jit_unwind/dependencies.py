"""Optional packages a debugger's Python may lack: the message, said once per session."""

import sys

from .render import missing_dependency

# What jit-unwind cannot do without pyelftools (one sentence for every message).
WITHOUT_PYELFTOOLS = ("without it jit-unwind cannot read the code registered through "
                      "GDB's JIT interface (info jit-regions lists none of it), core "
                      "files of another ELF class or byte order, nor call frame "
                      "information kept only in .debug_frame")
_warned = set()


def missing(package: str, consequence: str, debugger: str) -> str:
    """The one-line message for ``package`` missing from ``debugger``'s Python."""
    python = f"{debugger}'s Python {sys.version_info[0]}.{sys.version_info[1]}"
    return missing_dependency(package, consequence, python)


def warn_missing(process, package: str, consequence: str) -> None:
    """Say once per debugger session that ``package`` is missing and what that costs."""
    if package not in _warned:
        _warned.add(package)
        process.warn(f"jit-unwind: {missing(package, consequence, process.debugger_name)}")
