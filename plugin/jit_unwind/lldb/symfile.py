"""Load the symbol file of this stop's JIT code into LLDB (``SBTarget.AddModule`` at
slide 0) and replace it when the named regions change (``SBTarget.RemoveModule``).

Called at safe points only: a stop-hook (every stop, before the user sees it), and the
jit-regions and py-mixed-bt commands (a core file never stops); never from the frame
provider, which LLDB runs while it builds a thread's frames, nor from registration's
listener thread (AddModule there deadlocked LLDB 23.1 against a bt on the main thread).
With the file loaded, LLDB's own unwinder goes through the code the file has .eh_frame
for, and LLDB names the JIT frames inside the module from its symbols.
"""

import os
import re
import threading
from typing import Dict

import lldb

from ..symfile import SymbolFiles
from .state import cache_for

TRIPLE = "x86_64-unknown-linux-gnu"
# Our files' paths (SymbolFiles: a private jit-unwind-XXXX directory, jit-PID-N.elf).
OUR_FILE = re.compile(r"/jit-unwind-[^/]+/jit-\d+-\d+\.elf$")
HOOK = "jit_unwind.lldb.symfile.LoadOnStop"

# Per target (GloballyUniqueID): its SymbolFiles and the module loaded from it.
_files: Dict[int, SymbolFiles] = {}
_modules: Dict[int, "lldb.SBModule"] = {}


def is_enabled() -> bool:
    """``jit-unwind symbol-file on|off`` (default on)."""
    from .settings import setting
    return setting("symbol-file")


_lock = threading.Lock()


def _key(target: "lldb.SBTarget") -> int:
    """A target's identity (LLDB 19 has no GetGloballyUniqueID: its index then)."""
    unique = getattr(target, "GetGloballyUniqueID", None)
    if unique is not None:
        return unique()
    return -1 - target.GetDebugger().GetIndexOfTarget(target)


def refresh(target: "lldb.SBTarget") -> None:
    """Load, replace or unload ``target``'s symbol file for this stop; never raises."""
    try:
        with _lock:  # a stop-hook and a command may overlap (LLDB's async mode)
            _refresh(target)
    except Exception:  # a symbol file is a bonus; never disturb a stop
        pass


def _refresh(target) -> None:
    if target is None or not target.IsValid():
        return
    key = _key(target)
    files = _files.setdefault(key, SymbolFiles())
    process = target.GetProcess()
    if not is_enabled() or not process.IsValid() or process.GetProcessID() <= 0:
        _replace(target, key, files, files.discard(), None)
        return
    cache = cache_for(process)
    if files.loaded is None and not cache.may_name_jit_code():
        return  # no runtime lookups (JIT interface, CPython) at every stop
    old, new = files.plan(cache.process, cache)
    _replace(target, key, files, old, new)


def _replace(target, key, files, old, new) -> None:
    if old or new:
        # LLDB's own frames change with the module (its .eh_frame and symbols): a walk
        # made from the frames before it (a core's first frame, shown before a command
        # loads the file) would index frames that are no longer those.
        _forget_walks(target)
    if old:
        module = _modules.pop(key, None)
        if module is not None and module.IsValid():
            target.RemoveModule(module)
        files.delete(old)
    if new:
        _remove_saved_copies(target)
        module = target.AddModule(new, TRIPLE, None)
        if module is None or not module.IsValid():
            files.failed(new)
            return
        error = target.SetModuleLoadAddress(module, 0)
        if error.Fail():
            target.RemoveModule(module)
            files.failed(new)
            return
        _modules[key] = module
        # LLDB keeps what it read: parse the symbols now and remove the file at once, as
        # LLDB 19 exits without running Python's atexit handlers.
        module.GetNumSymbols()
        files.delete(new)
        try:
            os.rmdir(os.path.dirname(new))
        except OSError:
            pass


def _remove_saved_copies(target) -> None:
    """LLDB's own cores (``process save-core``) list the modules of the session that
    wrote them, our symbol file included; opening such a core, LLDB makes an empty
    module for that long deleted file at the JIT code's address.  Ours replaces it."""
    stale = []
    for index in range(target.GetNumModules()):
        module = target.GetModuleAtIndex(index)
        if OUR_FILE.search(module.GetFileSpec().fullpath or ""):
            stale.append(module)
    for module in stale:
        target.RemoveModule(module)


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
    from .registration import providers_supported
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
