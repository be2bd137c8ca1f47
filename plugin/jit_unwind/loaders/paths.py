"""Make the package that holds this file importable in a debugger's embedded Python,
which may be another Python than the one it was installed with (Debian's GDB embeds
the system Python 3.11, which sees no virtual environment).

Imported by file path from gdb_init.py and lldb_init.py, before ``jit_unwind`` can be
imported: standard library only."""

import os
import sys

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def add_paths() -> None:
    """The package's parent directory (a site-packages, or the source tree's plugin/)
    first, so that this jit_unwind wins over any other; once imported it is moved to the
    end, where it only supplies what the debugger's Python lacks (pyelftools and
    tabulate, pure Python).  A source tree's .venv is added the same way."""
    if PACKAGE_PARENT in sys.path:
        sys.path.remove(PACKAGE_PARENT)
    sys.path.insert(0, PACKAGE_PARENT)
    import jit_unwind  # noqa: F401  (bound to this copy from now on)
    sys.path.remove(PACKAGE_PARENT)
    sys.path.append(PACKAGE_PARENT)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = os.path.join(os.path.dirname(PACKAGE_PARENT), ".venv", "lib", version,
                        "site-packages")
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)
