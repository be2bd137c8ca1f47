"""The settings of jit-unwind in LLDB (``jit-unwind NAME on|off``) and the debug log:
what GDB's ``set jit-unwind show-method/debug`` are, plus ``python-frames`` (GDB turns
those off with ``disable frame-filter global jit-unwind``)."""

import sys

import lldb

# name -> (value, help)
SETTINGS = {
    "show-method": [False, "suffix each JIT frame in bt with the strategy that unwound it, "
                           "e.g. [via frame-pointer] (jitdump-cfi, prologue, "
                           "prologue-search, frame-pointer, entry-record, stack-scan)"],
    "debug": [False, "print one line per JIT frame unwound, for bug reports"],
    "python-frames": [True, "list under each eval-loop and JIT frame of bt the Python "
                            "frames it runs, as [py] frames with their file and line"],
}

# bt names JIT frames through frame-format: in an LLDB without frame providers
# (lldb-19) all of them; with providers (LLDB 22+) only those in code LLDB's own JIT
# loader has a module for (CPython 3.15's traces), which LLDB names from that module.
if not hasattr(lldb.SBTarget, "RegisterScriptedFrameProvider"):
    SETTINGS["frame-format"] = [True, "name JIT frames in bt through LLDB's frame-format "
                                      "and thread-format settings (this LLDB has no frame "
                                      "providers); off gives both their values back"]
else:
    SETTINGS["frame-format"] = [True, "name JIT frames in code LLDB's JIT loader knows "
                                      "(CPython 3.15's traces) in bt through LLDB's "
                                      "frame-format and thread-format settings; off gives "
                                      "both their values back"]
# The JIT symbol file (lldb/symfile.py), on by default: LLDB names JIT code from it
# outside bt (image lookup, disassemble, breakpoints), and its own unwinder goes through
# the code the file has .eh_frame for; with frame providers, the provider's walk takes
# LLDB's frames again where they meet its own (lldb/symfile.py drops a walk made before
# the module came or went).
SETTINGS["symbol-file"] = [
    True,
    "give LLDB a module naming the JIT functions of each stop (perf map, jitdump, "
    "CPython's JIT executors), so image lookup, disassemble and breakpoints name them"]
# Settings whose value is a path, not on|off: name -> help.
PATH_SETTINGS = {
    "jitdump": "the perf jitdump file (jit-PID.dump) to read first, when it is not where "
               "jit-unwind looks (the process's mapping of it, /tmp, the working "
               "directory, ~/.debug/jit); `auto` goes back to looking alone",
}
_ON_CHANGE = {}  # setting name -> callback(debugger, value) run when it is set


def on_change(name: str, callback) -> None:
    """Run ``callback(debugger, value)`` whenever ``jit-unwind NAME on|off`` is given."""
    _ON_CHANGE[name] = callback


def changed(name: str, debugger) -> None:
    """After ``jit-unwind NAME on|off``: what that setting does beyond its value."""
    callback = _ON_CHANGE.get(name)
    if callback is not None:
        callback(debugger, SETTINGS[name][0] if name in SETTINGS else None)


def setting(name: str) -> bool:
    return bool(SETTINGS[name][0])


def set_setting(name: str, value: bool) -> None:
    SETTINGS[name][0] = value


def show_method() -> bool:
    return setting("show-method")


def debug_log(message) -> None:
    """Print ``message`` (a string, or a callable making one: built only when asked)
    when ``jit-unwind debug on``."""
    if SETTINGS["debug"][0]:
        text = message() if callable(message) else message
        print(f"jit-unwind: {text}", file=sys.stderr)
