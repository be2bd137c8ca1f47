"""``bt`` names JIT frames in an LLDB without frame providers (Debian's lldb-19), through
LLDB's ``frame-format`` and ``thread-format`` settings: the core's ``format_strings``
says what the formats become and when the gate lets a scope print; this module reads
and writes the settings and gives LLDB the script functions.

The label function reads the per-stop cache (``state.cache_for``): a region lookup per
frame.  LLDB 22+ names JIT frames with its frame provider, except code LLDB's own JIT
loader knows (CPython 3.15 registers its traces through GDB's JIT interface): LLDB names
a frame there from that module, a provider's name included.  There the label names
those frames only (:data:`REGISTERED_ONLY`), every other frame prints as before.
"""

from typing import Optional

import lldb

from ..stack.format_strings import BARE_LABEL, GATE, LABEL, Gate, shown_format, with_label
from ..stack.frame_label import format_name
from .state import cache_for

SETTING = "frame-format"  # jit-unwind frame-format on|off
FORMATS = ("frame-format", "thread-format")

# (debugger id, setting name) -> its value before we changed it (restored by uninstall())
_saved = {}
# LLDB with frame providers: name only frames in code the debugger's JIT loader knows.
REGISTERED_ONLY = [False]
GATE_OBJECT = Gate()


def jit_name(frame: "lldb.SBFrame") -> Optional[str]:
    """The name of ``frame`` when it runs JIT code, else None."""
    process = frame.GetThread().GetProcess()
    if not process.IsValid():
        return None
    pc = frame.GetPC()
    if pc in (0, lldb.LLDB_INVALID_ADDRESS):
        return None
    return format_name(cache_for(process), pc, frame.GetFrameID() == 0, REGISTERED_ONLY[0])


def frame_label(frame: "lldb.SBFrame", internal_dict=None) -> str:
    """``${script.frame:jit_unwind_frame_label}``: " NAME" for a JIT frame, else ""."""
    try:
        name = jit_name(frame)
    except Exception:  # LLDB's frame-format calls in: never a traceback in bt
        name = None
    return GATE_OBJECT.label(name)


def frame_label_bare(frame: "lldb.SBFrame", internal_dict=None) -> str:
    """``${script.frame:jit_unwind_frame_label_bare}``: "NAME" for a JIT frame."""
    return frame_label(frame, internal_dict)[1:]


def _current(debugger: "lldb.SBDebugger", name: str) -> Optional[str]:
    """A format setting's value as set (LLDB shows it quoted, with "`" escaped)."""
    values = debugger.GetInternalVariableValue(name, debugger.GetInstanceName())
    if values is None or values.GetSize() != 1:
        return None
    return shown_format(values.GetStringAtIndex(0))


def _set(debugger: "lldb.SBDebugger", name: str, value: str) -> bool:
    return debugger.SetInternalVariable(name, value, debugger.GetInstanceName()).Success()


def install(debugger: "lldb.SBDebugger", internal_dict: dict) -> None:
    """At import: the script functions into the session dictionary, and the label
    into the formats unless the setting is off (with frame providers, for frames in
    code LLDB's JIT loader knows only)."""
    from .capabilities import providers_supported
    from .settings import on_change, setting
    REGISTERED_ONLY[0] = providers_supported()
    internal_dict[LABEL] = frame_label
    internal_dict[BARE_LABEL] = frame_label_bare
    internal_dict[GATE] = GATE_OBJECT
    on_change(SETTING, lambda debugger, on: (apply if on else uninstall)(debugger))
    # With providers the formats change once a stop has such code (apply_once): each
    # script entry costs every frame's line about 100 µs.
    if setting(SETTING) and not REGISTERED_ONLY[0]:
        apply(debugger)


def apply_once(debugger: "lldb.SBDebugger") -> None:
    """With frame providers: put the label into the formats the first time a stop has
    JIT code that LLDB's JIT loader knows and we name (unless the setting is off)."""
    from .settings import setting
    if setting(SETTING) and not any(key[0] == debugger.GetID() for key in _saved):
        apply(debugger)


def apply(debugger: "lldb.SBDebugger") -> None:
    """Put the label into ``debugger``'s frame and thread formats where they have none
    (at import, after ``jit-unwind frame-format on``, after ``settings clear``)."""
    for name in FORMATS:
        value = _current(debugger, name)
        if value is None or LABEL in value:
            continue
        new = with_label(value)
        if new is not None and _set(debugger, name, new):
            _saved[(debugger.GetID(), name)] = value


def uninstall(debugger: "lldb.SBDebugger") -> None:
    """Give ``debugger``'s formats back the values they had before apply(), where they
    are still ours (a format the user set since stays the user's)."""
    for key, value in list(_saved.items()):
        if key[0] != debugger.GetID():
            continue
        current = _current(debugger, key[1])
        if current is not None and LABEL in current:
            _set(debugger, key[1], value)
        del _saved[key]
