"""Load jit-unwind into GDB:  (gdb) source /path/to/jit-unwind/gdb_init.py"""

import os
import sys
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))


def _add_paths() -> None:
    plugin = os.path.join(_HERE, "plugin")
    if plugin not in sys.path:
        sys.path.insert(0, plugin)
    # Debian's GDB embeds the system Python and cannot see a virtual environment's
    # packages; use the project's own .venv (made by `make test`) when it matches.
    site = os.path.join(_HERE, ".venv", "lib",
                        f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)


try:
    _add_paths()
    import jit_unwind.gdb
    jit_unwind.gdb.install()
except Exception:
    traceback.print_exc()
    raise
