"""Load jit-unwind into LLDB:  (lldb) command script import /path/to/jit-unwind/lldb_init.py"""

import os
import sys
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))


def _add_paths() -> None:
    plugin = os.path.join(_HERE, "plugin")
    if plugin not in sys.path:
        sys.path.insert(0, plugin)
    site = os.path.join(_HERE, ".venv", "lib",
                        f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)


def __lldb_init_module(debugger, internal_dict):
    try:
        _add_paths()
        import jit_unwind.lldb
        jit_unwind.lldb.install(debugger, internal_dict)
    except Exception:
        traceback.print_exc()
        raise
