"""A Linux minidump read without any debugger: what ``jit-unwind core --debugger none
FILE.dmp`` runs ``py-mixed-bt`` over.  The walk is the core reader's (``coreread``: its
frames, the one native step, DWARF names); this package supplies what a core's notes
and segments would, from the minidump's streams (Breakpad's, Crashpad's, LLDB's
``process save-core --plugin-name=minidump``).

``streams``: the file format (threads and their contexts, memory lists, modules with
build IDs, the Linux maps, auxv and status streams, the processor), read with struct.
``image``: those as ``coreread.image`` gives a core's.
``process``: the debugger interface over them, reading no file's bytes where the process
could have written.
"""

import importlib

_EXPORTS = {"MinidumpImage": "image", "MinidumpProcess": "process",
            "open_minidump": "process"}


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = ["MinidumpImage", "MinidumpProcess", "open_minidump"]
