"""A live process read without any debugger: what ``jit-unwind attach --debugger none``
runs ``py-mixed-bt`` over.  The walk is the core reader's (``coreread``: its frames,
the one native step, DWARF names); this package supplies what a core's notes would.

``ptrace``: the Linux calls, through ctypes (seize, interrupt, registers, detach,
process_vm_readv).
``threads``: every thread stopped for the read and let go on every path (errors, the
reader's signals), or, ``--nonblocking``, each stopped alone for its registers.
``memory``: process_vm_readv, else /proc/PID/mem.
``image``: the mapped files (opened from this host) and the threads' registers, as
``coreread.image`` gives a core's.
``process``: the debugger interface over all of it.
``refusal``: why a process cannot be read, with the fix.
``snapshot``: the pages the walk read while the threads were stopped, kept.
``session``: one read: check, stop, walk, let go, name.
"""

import importlib

_EXPORTS = {"LiveProcess": "process", "read_process": "session",
            "LiveReadError": "session"}


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = ["LiveProcess", "LiveReadError", "read_process"]
