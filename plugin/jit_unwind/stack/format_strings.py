"""Where jit-unwind's name goes in LLDB's ``frame-format`` and ``thread-format`` strings
(lldb-19's ``bt``, which has no frame providers; LLDB 22+ for code LLDB's JIT loader
names): the text of the formats and the gate's rule.  The adapter
(``lldb/frame_format.py``) reads and writes the settings and registers the functions.

LLDB formats each frame line from a format string; ``${script.frame:NAME}`` in it calls
the Python function NAME (resolved in the script interpreter's session dictionary) with
the frame and that dictionary, and prints the string it returns.  LLDB drops a
``{scope}`` whose entries do not all succeed; a script entry fails, silently, when its
name does not resolve (a function raising prints a traceback and succeeds).  Two
entries go into the formats the user has (LLDB's defaults unless changed before the
import):

- ``{${frame.no-debug}${script.frame:jit_unwind_frame_label}}`` right after the pc: " NAME"
  for a JIT frame (``frame_label.format_name``), "" for any other frame; called only for
  frames whose pc has no line entry (``${frame.no-debug}``: JIT code has none);
- ``${script.frame:jit_unwind_frame_gate.native}`` in the scope that prints
  "module`function" (see with_label): the gate has no attribute ``native`` right after
  the label function saw JIT code, so a JIT frame's line shows our name instead of the
  symbol file's "jit-PID-N.elf`NAME + 16".

Native frames print exactly as before (both entries give "").  Each script entry costs
LLDB about 100 µs (it sets up its Python session for each): in LLDB's own formats none
runs for a frame with a line entry, one for a JIT frame outside any module, two for
other frames (JIT code in the symbol file, native code without line information);
bench/lldb19_frame_format.py measures it.
"""

from typing import Optional

LABEL = "jit_unwind_frame_label"
BARE_LABEL = "jit_unwind_frame_label_bare"  # without the leading space
GATE = "jit_unwind_frame_gate"
PC = "${frame.pc}"
MODULE_SCOPE = "{ ${module.file.basename}"
LINE_SCOPE = "{ at "
NO_LINE = "${frame.no-debug}"  # LLDB: the frame's pc has no line entry
GATE_ENTRY = "${script.frame:" + GATE + ".native}"
# LLDB 23's formats print the module and the function in two scopes.
SPLIT_MODULE_SCOPE = "{${module.file.basename}"
FUNCTION_SCOPE = "{${function.name-with-args}"
FIRST_GATE_ENTRY = "${script.frame:" + GATE + ".native_first}"


class Gate:
    """Has ``native`` (a script function printing "") unless the label function has
    just seen JIT code; LLDB then finds no such function and drops the module scope.
    A failed lookup asks once and resets the gate: the next frame's label function may
    not run (a frame with debug information)."""

    def __init__(self) -> None:
        self.jit = False

    def label(self, name: Optional[str]) -> str:
        """The label function's text for a frame named ``name`` (None: no JIT code),
        closing the gate after JIT code."""
        self.jit = bool(name)
        return " " + name if name else ""

    def __getattr__(self, name):  # only for attributes not found the usual way
        if name in ("native", "native_first"):
            if not self.jit:
                return _nothing
            if name == "native":  # the last gate of the frame's line
                self.jit = False
        raise AttributeError(name)


def _nothing(frame, internal_dict) -> str:
    return ""


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


def shown_format(shown: str) -> Optional[str]:
    """A format setting's value from LLDB's display of it (quoted, "`" escaped), or
    None when it is not shown so."""
    if len(shown) < 2 or shown[0] != '"' or shown[-1] != '"':
        return None
    return shown[1:-1].replace("\\`", "`")
