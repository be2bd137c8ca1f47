"""Put the frame provider on every target, including targets created later.

LLDB 23 registers providers per target, and one registered on the dummy target is not
copied to new targets (stop-hooks are).  So:

- at import, on every existing target;
- from a stop-hook added to the dummy target (when no target exists yet at import, as
  with ~/.lldbinit): it runs at every stop of every later target, before the user sees
  the stop, and registers the provider on its target once;
- from a listener thread on the target event class ("modules loaded"): covers core
  files, which never stop, shortly after ``target create --core``;
- from the jit-unwind commands, on their target.
"""

import threading

import lldb

from .capabilities import providers_supported
from .reprints import reprints_waited

PROVIDER = "jit_unwind.lldb.provider.JitFrameProvider"
_registered = {}  # GloballyUniqueID of a target that has the provider -> provider id
_lock = threading.Lock()


def ensure_provider(target: "lldb.SBTarget") -> str:
    """Register the provider on ``target`` once; "" or why it could not be."""
    if not providers_supported():
        return "this LLDB has no scripted frame providers (LLDB 22+ has)"
    if target is None or not target.IsValid():
        return "no target"
    key = target.GetGloballyUniqueID()
    with _lock:
        if key in _registered:
            return ""
        args = lldb.SBStructuredData()
        args.SetFromJSON("{}")
        error = lldb.SBError()
        with reprints_waited(_thread_count(target)):
            provider_id = target.RegisterScriptedFrameProvider(PROVIDER, args, error)
        if error.Fail():
            return f"cannot register the frame provider: {error.GetCString()}"
        _registered[key] = provider_id
    return ""


def _thread_count(target: "lldb.SBTarget") -> int:
    process = target.GetProcess()
    return process.GetNumThreads() if process.IsValid() else 0


def refresh_providers(debugger: "lldb.SBDebugger") -> None:
    """Make LLDB list the frames again (a setting changed what the provider shows): the
    provider is removed and registered again on every target that has it."""
    if not providers_supported():
        return
    for index in range(debugger.GetNumTargets()):
        target = debugger.GetTargetAtIndex(index)
        with _lock:
            provider_id = _registered.pop(target.GetGloballyUniqueID(), None)
        if provider_id is not None:
            with reprints_waited(_thread_count(target)):
                target.RemoveScriptedFrameProvider(provider_id)  # an SBError, never raises
        ensure_provider(target)


def load_core(debugger: "lldb.SBDebugger", core: str) -> None:
    """Load ``core`` into the selected target after the provider is on it: what
    ``jit-unwind core --debugger lldb`` runs instead of ``lldb -c CORE``.

    Adding a provider to a target whose threads exist tells each thread its stack
    changed; LLDB's event thread then reprints every thread's frame 0 through the
    provider while the next ``-o`` command lists frames on the main thread, and the two
    take LLDB 23's frame-list and API locks in opposite orders: about one run in two
    hung for good.  With the provider on the target before the core's threads exist,
    nothing is reprinted."""
    target = debugger.GetSelectedTarget()
    ensure_provider(target)
    error = lldb.SBError()
    target.LoadCore(core, error)
    if error.Fail():
        print(f"error: cannot load the core {core}: {error.GetCString()}")


class RegisterOnStop:
    """Stop-hook (``target stop-hook add -P``): registers the provider on its target
    and refreshes the target's symbol file (names JIT code outside bt too)."""

    def __init__(self, target, extra_args, internal_dict):
        pass

    def handle_stop(self, exe_ctx, stream):
        for action in (ensure_provider, _refresh_symbol_file):
            try:
                action(exe_ctx.GetTarget())
            except Exception:  # LLDB's stop-hook calls in: never disturb a stop
                pass
        return True


def _refresh_symbol_file(target) -> None:
    from .symfile import refresh
    refresh(target)


def _listen(listener: "lldb.SBListener", stop: threading.Event):
    event = lldb.SBEvent()
    while not stop.is_set():
        try:
            if not listener.WaitForEvent(1, event):
                continue
            target = lldb.SBTarget.GetTargetFromEvent(event)
            if target.IsValid():
                # Only the provider: adding the symbol file's module from this thread
                # deadlocked LLDB 23.1 against a `bt` on the main thread (a core's
                # symbol file is loaded by the commands instead).
                ensure_provider(target)
        except Exception:  # our listener thread: an error must not end it
            continue


_listener_stop = threading.Event()


def install_registration(debugger: "lldb.SBDebugger") -> None:
    if not providers_supported():
        return
    for index in range(debugger.GetNumTargets()):
        ensure_provider(debugger.GetTargetAtIndex(index))
    if debugger.GetNumTargets() == 0:  # the stop-hook lands on the dummy target
        result = lldb.SBCommandReturnObject()
        debugger.GetCommandInterpreter().HandleCommand(
            "target stop-hook add -P jit_unwind.lldb.registration.RegisterOnStop", result)
    listener = lldb.SBListener("jit-unwind.targets")
    listener.StartListeningForEventClass(
        debugger, lldb.SBTarget.GetBroadcasterClassName(),
        lldb.SBTarget.eBroadcastBitModulesLoaded)
    thread = threading.Thread(target=_listen, name="jit-unwind target listener",
                              args=(listener, _listener_stop),
                              daemon=True)
    thread.start()
