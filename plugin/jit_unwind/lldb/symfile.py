"""Load the symbol file of this stop's JIT code into LLDB (``SBTarget.AddModule`` at
slide 0) and replace it when the named regions change (``SBTarget.RemoveModule``).

Called at safe points only: a stop-hook (every stop, before the user sees it), and the
jit-regions and py-mixed-bt commands (a core file never stops); never from the frame
provider, which LLDB runs while it builds a thread's frames, nor from registration's
listener thread (AddModule there deadlocked LLDB 23.1 against a bt on the main thread).
With the file loaded, LLDB's own unwinder goes through the code the file has .eh_frame
for, and LLDB names the JIT frames inside the module from its symbols.
"""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

import threading
from typing import Dict

import lldb

from ..symfile import SymbolFiles
from . import own_module
from .capabilities import providers_supported
from .state import cache_for

TRIPLE = "x86_64-unknown-linux-gnu"
HOOK = "jit_unwind.lldb.symfile.LoadOnStop"

# Per target (GloballyUniqueID): its SymbolFiles and the module loaded from it.
_files: Dict[int, SymbolFiles] = {}
_modules = own_module.MODULES


def is_enabled() -> bool:
    """``jit-unwind symbol-file on|off`` (default on)."""
    from .settings import setting
    return setting("symbol-file")


_lock = threading.Lock()


_key = own_module.target_key


def refresh(target: "lldb.SBTarget") -> None:
    """Load, replace or unload ``target``'s symbol file for this stop; never raises."""
    try:
        with _lock:  # a stop-hook and a command may overlap (LLDB's async mode)
            _refresh(target)
    except Exception:  # stop-hooks and commands call in: never disturb a stop
        pass


def _refresh(target) -> None:
    if target is None or not target.IsValid():
        return
    key = _key(target)
    files = _files.setdefault(key, SymbolFiles())
    process = target.GetProcess()
    if not is_enabled() or not process.IsValid() or process.GetProcessID() <= 0:
        old, new = files.discard(), None
    else:
        old, new = files.plan_stop(cache_for(process))
    if old or new:
        # LLDB's own frames change with the module (its .eh_frame and symbols): a walk
        # made from the frames before it (a core's first frame, shown before a command
        # loads the file) would index frames that are no longer those.
        _forget_walks(target)
    # LLDB keeps what it read (the symbols are parsed at once): the file goes at once,
    # as LLDB 19 exits without running Python's atexit handlers.
    files.swap(old, new, lambda _old: _remove_module(target, key),
               lambda path: _add_module(target, key, files, path), keep_loaded_file=False)


def _remove_module(target, key) -> None:
    module = _modules.pop(key, None)
    if module is not None and module.IsValid():
        target.RemoveModule(module)


def _add_module(target, key, files, path) -> bool:
    """Load ``path`` at slide 0 in place of saved copies of our files: LLDB's own cores
    (``process save-core``) list the modules of the session that wrote them, our symbol
    file included, and LLDB makes an empty module for that long deleted file."""
    stale = [target.GetModuleAtIndex(index) for index in range(target.GetNumModules())]
    for module in stale:
        if files.is_ours(module.GetFileSpec().fullpath or ""):
            target.RemoveModule(module)
    module = target.AddModule(path, TRIPLE, None)
    if module is None or not module.IsValid():
        return False
    if target.SetModuleLoadAddress(module, 0).Fail():
        target.RemoveModule(module)
        return False
    _modules[key] = module
    module.GetNumSymbols()
    return True


def _forget_walks(target) -> None:
    process = target.GetProcess()
    if process.IsValid():
        cache_for(process).forget_unwinding()  # the regions stay the same


def in_symbol_file(target: "lldb.SBTarget", pc: int) -> bool:
    """True when ``pc`` lies in the module of ``target``'s symbol file.  The provider
    returns such frames as ``{"pc": ...}`` (LLDB names them from the module): LLDB 23.1
    crashes evaluating ``$pc`` (``image lookup -a $pc``) in a ScriptedFrame there."""
    module = _modules.get(_key(target))
    if module is None or pc is None:
        return False
    return target.ResolveLoadAddress(pc).GetModule() == module


def loaded(target: "lldb.SBTarget"):
    """(path, predicate on a Region) for jit-regions, or None."""
    files = _files.get(_key(target))
    if files is None or files.loaded is None:
        return None
    return files.loaded, files.covers


def cleanup(*_args) -> None:
    for files in _files.values():
        files.cleanup()


class LoadOnStop:
    """Stop-hook (``target stop-hook add -P``): refreshes its target's symbol file."""

    def __init__(self, target, extra_args, internal_dict):
        pass

    def handle_stop(self, exe_ctx, stream):
        refresh(exe_ctx.GetTarget())
        return True


def install(debugger: "lldb.SBDebugger") -> None:
    """Refresh at every stop: registration's stop-hook does it where it adds one (LLDB
    22+ with no target yet); otherwise a stop-hook of our own, on every existing target
    or on the dummy target (LLDB copies that one to targets created later).  One hook
    only: with two, LLDB prints a header for each at every stop."""
    import atexit
    atexit.register(cleanup)
    targets = [debugger.GetTargetAtIndex(i) for i in range(debugger.GetNumTargets())]
    if providers_supported() and not targets:
        return
    interpreter = debugger.GetCommandInterpreter()
    selected = debugger.GetSelectedTarget()
    for target in targets or [None]:
        if target is not None:
            debugger.SetSelectedTarget(target)
        interpreter.HandleCommand(f"target stop-hook add -P {HOOK}",
                                  lldb.SBCommandReturnObject())
    if selected.IsValid():
        debugger.SetSelectedTarget(selected)
