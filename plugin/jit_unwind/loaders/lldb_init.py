"""Load the installed jit-unwind into LLDB:
(lldb) command script import /path/to/jit_unwind/loaders/lldb_init.py"""

import importlib.util
import os
import traceback

_PATHS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paths.py")


def __lldb_init_module(debugger, internal_dict):
    try:
        spec = importlib.util.spec_from_file_location("_jit_unwind_paths", _PATHS)
        paths = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(paths)
        paths.add_paths()
        import jit_unwind.lldb
        jit_unwind.lldb.install(debugger, internal_dict)
    except Exception:  # LLDB loads us: say in full why the plugin is not there
        traceback.print_exc()
        raise
