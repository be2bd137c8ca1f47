"""``bt`` names JIT frames in an LLDB without frame providers (Debian's lldb-19), through
LLDB's ``frame-format`` and ``thread-format`` settings.

LLDB formats each frame line from a format string; ``${script.frame:NAME}`` in it calls
the Python function NAME (resolved in the script interpreter's session dictionary) with
the frame and that dictionary, and prints the string it returns.  LLDB drops a
``{scope}`` whose entries do not all succeed; a script entry fails, silently, when its
name does not resolve (a function raising prints a traceback and succeeds).  We insert
two entries into the formats the user has (LLDB's defaults unless changed before the
import):

- ``{${frame.no-debug}${script.frame:jit_unwind_frame_label}}`` right after the pc: " NAME"
  for a JIT frame (the perf map's or CPython's name, else ``[jit START+OFFSET]``, as the
  frame provider and py-mixed-bt name it), "" for any other frame; called only for
  frames whose pc has no line entry (``${frame.no-debug}``: JIT code has none);
- ``${script.frame:jit_unwind_frame_gate.native}`` in the scope that prints
  "module`function" (see with_label): the gate has no attribute ``native`` right after
  the label function saw JIT code, so a JIT frame's line shows our name instead of the
  symbol file's "jit-PID-N.elf`NAME + 16".

Native frames print exactly as before (both entries give "").  Each script entry costs
LLDB about 100 µs (it sets up its Python session for each): in LLDB's own formats none
runs for a frame with a line entry, one for a JIT frame outside any module, two for
other frames (JIT code in the symbol file, native code without line information);
bench/lldb19_frame_format.py measures it.  The label function reads the per-stop cache
(``state.cache_for``): a region lookup per frame.  LLDB 22+ names JIT frames with its
frame provider, except code LLDB's own JIT loader knows (CPython 3.15 registers its
traces through GDB's JIT interface): LLDB names a frame there from that module
(``JIT(0x…)`py::jit:executor``), a provider's name included.  There the label names
those frames only (:data:`REGISTERED_ONLY`), every other frame prints as before.
"""

from typing import Optional

import lldb

from ..frame_label import format_name
from .state import cache_for

SETTING = "frame-format"  # jit-unwind frame-format on|off
LABEL = "jit_unwind_frame_label"
BARE_LABEL = "jit_unwind_frame_label_bare"  # without the leading space
GATE = "jit_unwind_frame_gate"
FORMATS = ("frame-format", "thread-format")
PC = "${frame.pc}"
MODULE_SCOPE = "{ ${module.file.basename}"
LINE_SCOPE = "{ at "
NO_LINE = "${frame.no-debug}"  # LLDB: the frame's pc has no line entry
GATE_ENTRY = "${script.frame:" + GATE + ".native}"
# LLDB 23's formats print the module and the function in two scopes.
SPLIT_MODULE_SCOPE = "{${module.file.basename}"
FUNCTION_SCOPE = "{${function.name-with-args}"
FIRST_GATE_ENTRY = "${script.frame:" + GATE + ".native_first}"

# (debugger id, setting name) -> its value before we changed it (restored by uninstall())
_saved = {}
# LLDB with frame providers: name only frames in code the debugger's JIT loader knows.
REGISTERED_ONLY = [False]


class _Gate:
    """Has ``native`` (a script function printing "") unless the label function has
    just seen JIT code; LLDB then finds no such function and drops the module scope.
    A failed lookup asks once and resets the gate: the next frame's label function may
    not run (a frame with debug information)."""

    def __init__(self) -> None:
        self.jit = False

    def __getattr__(self, name):  # only for attributes not found the usual way
        if name in ("native", "native_first"):
            if not self.jit:
                return _nothing
            if name == "native":  # the last gate of the frame's line
                self.jit = False
        raise AttributeError(name)


def _nothing(frame, internal_dict) -> str:
    return ""


GATE_OBJECT = _Gate()


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
    GATE_OBJECT.jit = False
    try:
        name = jit_name(frame)
    except Exception:  # never a traceback in a backtrace: LLDB's own line
        return ""
    if not name:
        return ""
    GATE_OBJECT.jit = True
    return " " + name


def frame_label_bare(frame: "lldb.SBFrame", internal_dict=None) -> str:
    """``${script.frame:jit_unwind_frame_label_bare}``: "NAME" for a JIT frame."""
    return frame_label(frame, internal_dict)[1:]


def scope_end(text: str, start: int) -> Optional[int]:
    """The index after the ``{scope}`` opening at ``text[start]`` (escapes skipped)."""
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def with_label(value: str) -> Optional[str]:
    """``value`` (a format string) with the label and the gate inserted, or None when
    it has no pc to put the label after (the user's own format: left alone).

    Where the "module`function" scope is followed by the " at file:line" scope, as in
    LLDB's formats, the two become one scope (printed when the frame has a line entry,
    as both were) and a copy of the first for frames without one, which alone holds
    the gate: frames with debug information cost no script call at all."""
    if LABEL in value:
        return value
    at = value.find(PC)
    if at < 0:
        return None
    at += len(PC)
    if MODULE_SCOPE not in value:
        split = _with_split_gates(value, at)
        if split is not None:
            return split
    if value.startswith("${ansi.normal}", at):  # the pc's colour ends first
        at += len("${ansi.normal}")
    label = f"{{{NO_LINE}${{script.frame:{LABEL}}}}}"
    result = value[:at] + label + value[at:]
    start = result.find(MODULE_SCOPE, at + len(label))
    end = scope_end(result, start) if start >= 0 else None
    if end is None:
        return result
    module = result[start:end]
    if result.startswith(LINE_SCOPE, end):
        line_end = scope_end(result, end)
        if line_end is not None:
            line = result[end:line_end]
            both = module[:-1] + line[1:-1] + "}"
            # The gate last: LLDB prints a scope once all of it succeeded, and a frame
            # without a module (JIT code without the symbol file) fails before it:
            # one script call fewer.  The label ran for every frame that gets here.
            gated = "{" + NO_LINE + module[1:-1] + GATE_ENTRY + "}"
            return result[:start] + both + gated + result[line_end:]
    # The gate first, where it runs for every frame: it resets itself after a JIT frame.
    return result[:start] + "{" + GATE_ENTRY + module[1:] + result[end:]


def _with_split_gates(value: str, after: int) -> Optional[str]:
    """LLDB 23's formats: the pc's scope ends with the space, then "{module`}" and
    "{function}" scopes.  The label (no leading space) goes before the module, and
    both scopes are gated: a JIT frame's line shows our name instead of the module's
    "JIT(0x…)`py::jit:executor + 2134".  None when ``value`` is not of that form."""
    start = value.find(SPLIT_MODULE_SCOPE, after)
    end = scope_end(value, start) if start >= 0 else None
    if end is None or not value.startswith(FUNCTION_SCOPE, end):
        return None
    label = f"{{{NO_LINE}${{script.frame:{BARE_LABEL}}}}}"
    return (value[:start] + label + "{" + FIRST_GATE_ENTRY + value[start + 1:end]
            + "{" + GATE_ENTRY + value[end + 1:])


def _current(debugger: "lldb.SBDebugger", name: str) -> Optional[str]:
    """A format setting's value as set (LLDB shows it quoted, with "`" escaped)."""
    values = debugger.GetInternalVariableValue(name, debugger.GetInstanceName())
    if values is None or values.GetSize() != 1:
        return None
    shown = values.GetStringAtIndex(0)
    if len(shown) < 2 or shown[0] != '"' or shown[-1] != '"':
        return None
    return shown[1:-1].replace("\\`", "`")


def _set(debugger: "lldb.SBDebugger", name: str, value: str) -> bool:
    return debugger.SetInternalVariable(name, value, debugger.GetInstanceName()).Success()


def install(debugger: "lldb.SBDebugger", internal_dict: dict) -> None:
    """At import: the script functions into the session dictionary, and the label
    into the formats unless the setting is off (with frame providers, for frames in
    code LLDB's JIT loader knows only)."""
    from .registration import providers_supported
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
