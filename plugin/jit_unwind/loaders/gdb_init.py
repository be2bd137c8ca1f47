"""Load the installed jit-unwind into GDB:  (gdb) source /path/to/jit_unwind/loaders/gdb_init.py"""

import importlib.util
import os
import traceback


def _load() -> None:
    spec = importlib.util.spec_from_file_location(
        "_jit_unwind_paths", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "paths.py"))
    paths = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(paths)
    paths.add_paths()
    import jit_unwind.gdb
    jit_unwind.gdb.install()


try:
    _load()
except Exception:
    traceback.print_exc()
    raise
