"""Optional packages a debugger's Python may lack: the message, said once per session."""

import os
import sys

# The packages jit-unwind imports that a debugger's Python may lack: Debian's package.
DEBIAN_PACKAGES = {"pyelftools": "python3-pyelftools", "tabulate": "python3-tabulate"}
# The source tree (gdb_init.py, Makefile), when jit-unwind runs from it.
# (os.path, not pathlib: pathlib alone costs a few ms of the debugger's start-up.)
_SOURCE_TREE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def missing_dependency(package: str, consequence: str, python: str) -> str:
    """One line saying ``package`` is missing from ``python`` (e.g. "GDB's Python
    3.11"), what that costs, and the command that installs it."""
    text = (f"{package} is not installed in {python}: {consequence}. Install it with "
            f"`apt-get install {DEBIAN_PACKAGES.get(package, package)}` (Debian's GDB)")
    if os.path.exists(os.path.join(_SOURCE_TREE, "Makefile")):
        text += f" or run `make venv` in {_SOURCE_TREE} (gdb_init.py then uses its .venv)"
    return text + "."


# What jit-unwind cannot do without pyelftools (one sentence for every message).
WITHOUT_PYELFTOOLS = ("without it jit-unwind cannot read the code registered through "
                      "GDB's JIT interface (info jit-regions lists none of it), core "
                      "files of another ELF class or byte order, nor call frame "
                      "information kept only in .debug_frame")
_warned: set[str] = set()


def missing(package: str, consequence: str, debugger: str) -> str:
    """The one-line message for ``package`` missing from ``debugger``'s Python."""
    python = f"{debugger}'s Python {sys.version_info[0]}.{sys.version_info[1]}"
    return missing_dependency(package, consequence, python)


def warn_missing(process, package: str, consequence: str) -> None:
    """Say once per debugger session that ``package`` is missing and what that costs."""
    if package not in _warned:
        _warned.add(package)
        process.warn(f"jit-unwind: {missing(package, consequence, process.debugger_name)}")
