"""The module each LLDB target holds of the plugin's JIT symbol file: written by
``symfile.py``, asked by ``debugger.py`` (a target's first module that is not ours is its
executable)."""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

from typing import Dict

import lldb

# Per target (its key): the module loaded from the symbol file.
MODULES: Dict[int, "lldb.SBModule"] = {}


def target_key(target: "lldb.SBTarget") -> int:
    """A target's identity (LLDB 19 has no GetGloballyUniqueID: its index then)."""
    unique = getattr(target, "GetGloballyUniqueID", None)
    if unique is not None:
        return unique()
    return -1 - target.GetDebugger().GetIndexOfTarget(target)


def is_own_module(target: "lldb.SBTarget", module: "lldb.SBModule") -> bool:
    """Whether ``module`` is the symbol file we loaded into ``target``."""
    return MODULES.get(target_key(target)) == module
