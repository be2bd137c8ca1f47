"""Load the installed jit-unwind into GDB:  (gdb) source /path/to/jit_unwind/loaders/gdb_init.py"""

import os
import traceback


def _load() -> None:
    # paths.py run from its file, not through importlib.util (4 ms of GDB's start-up).
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paths.py")
    paths = {"__file__": path, "__name__": "_jit_unwind_paths"}
    with open(path) as handle:
        exec(compile(handle.read(), path, "exec"), paths)
    paths["add_paths"]()
    import jit_unwind.gdb
    jit_unwind.gdb.install()


try:
    _load()
except Exception:  # GDB sources us: say in full why the plugin is not there
    traceback.print_exc()
    raise
