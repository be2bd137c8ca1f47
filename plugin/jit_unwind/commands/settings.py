"""jit-unwind's settings, declared once: each debugger's adapter makes its own commands
from this table (GDB: ``set/show jit-unwind NAME`` parameters; LLDB: the ``jit-unwind``
command, commands/jit_unwind_settings.py) and reads the values here."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from ..records import record
from typing import Callable, Dict, List, Optional, Tuple

ABOUT = "jit-unwind, which unwinds and names JIT frames."

# The kinds of value: on/off, and a file name ("" when unset).  Another kind needs its
# spelling in each adapter (GDB's PARAM_*, the words of LLDB's jit-unwind command).
BOOL, PATH = "bool", "path"


class SettingError(ValueError):
    """A value the setting refuses (the message says why); the old value stays."""


@record(frozen=True)
class Setting:
    """One setting.  ``help`` per debugger: "gdb" is the long help of ``help set
    jit-unwind NAME``, "lldb" the line in ``help jit-unwind`` ("lldb-without-providers":
    in an LLDB without scripted frame providers, when it says something else)."""

    name: str
    kind: str  # BOOL or PATH
    default: object
    help: Dict[str, str]
    set_doc: str = ""  # GDB: the first line of "help set jit-unwind NAME"
    show_doc: str = ""  # GDB: that of "help show ..."; set_doc's words by default
    show: str = ""  # GDB: what "show jit-unwind NAME" prints, {value} its value
    show_unset: str = ""  # ... when a path is unset
    maintenance: bool = False  # GDB lists it among maintenance commands
    apply: Optional[Callable[[object], None]] = None  # what a new value does in the core
    # Why a new value is refused (a sentence), or None when it is accepted.
    check: Optional[Callable[[object], Optional[str]]] = None
    debuggers: Tuple[str, ...] = ("gdb", "lldb")

    def __init__(self, name: str, kind: str, default: object, help: Dict[str, str],
                 set_doc: str = "", show_doc: str = "", show: str = "", show_unset: str = "",
                 maintenance: bool = False, apply: Optional[Callable[[object], None]] = None,
                 check: Optional[Callable[[object], Optional[str]]] = None,
                 debuggers: Tuple[str, ...] = ("gdb", "lldb")):
        # Written out (records.py): compiled, it was ~0.2 ms of the plugin's load.
        self.__dict__.update(name=name, kind=kind, default=default, help=help,
                             set_doc=set_doc, show_doc=show_doc, show=show,
                             show_unset=show_unset, maintenance=maintenance, apply=apply,
                             check=check, debuggers=debuggers)

    def help_for(self, debugger: str) -> str:
        """The help for ``debugger`` ("lldb-without-providers" falls back to "lldb")."""
        return self.help.get(debugger) or self.help[debugger.split("-")[0]]

    def gdb_show_doc(self) -> str:
        return self.show_doc or "Show" + self.set_doc[len("Set"):]

    def show_text(self, value) -> str:
        if self.kind == PATH and not value:
            return self.show_unset
        return self.show.format(value=value)


def _readable_file(path) -> Optional[str]:
    """None when ``path`` is unset ("") or a file jit-unwind can read, else why not."""
    if not path:
        return None
    if not os.path.exists(path):
        return f"{path}: no such file."
    if not os.path.isfile(path):
        return f"{path}: not a file."
    if not os.access(path, os.R_OK):
        return f"{path}: not readable."
    return None


def _use_jitdump(path) -> None:
    from ..regions import jitdump_paths  # not the reader, imported when first used
    jitdump_paths.set_user_path(path or None)


SETTINGS: Dict[str, Setting] = {}


def declare(setting: Setting) -> Setting:
    SETTINGS[setting.name] = setting
    _values[setting.name] = setting.default
    return setting


_values: Dict[str, object] = {}


def value(name: str):
    return _values[name]


def set_value(name: str, new) -> None:
    """Set ``name`` and apply it in the core.  The adapter has checked the value's kind;
    SettingError when the setting refuses the value (the old one stays)."""
    check = SETTINGS[name].check
    refusal = check(new) if check is not None else None
    if refusal is not None:
        raise SettingError(refusal)
    _values[name] = new
    apply = SETTINGS[name].apply
    if apply is not None:
        apply(new)


def for_debugger(debugger: str) -> List[Setting]:
    """The settings ``debugger`` ("gdb", "lldb") has, in declaration order."""
    base = debugger.split("-")[0]
    return [setting for setting in SETTINGS.values() if base in setting.debuggers]


_METHODS = "jitdump-cfi, prologue, prologue-search, frame-pointer, entry-record"

declare(Setting(
    "show-method", BOOL, False,
    help={"gdb": f"""Whether backtraces say how each JIT frame's caller was found.

When on, JIT frames carry a suffix such as "[via frame-pointer]" naming the strategy
jit-unwind unwound them with: {_METHODS}
or stack-scan.
Frames in code without call frame information that the plugin unwound (hand-written
assembly, code built without unwind tables) carry it too, after their own name.
Callers found by the stack scan are always marked as a guess.""",
          "lldb": "suffix each JIT frame in bt with the strategy that unwound it, e.g. "
                  f"[via frame-pointer] ({_METHODS}, stack-scan)"},
    set_doc="Set whether backtraces show how jit-unwind unwound each JIT frame.",
    show="Showing how JIT frames were unwound is {value}."))

declare(Setting(
    "debug", BOOL, False,
    help={"gdb": """Whether jit-unwind prints what its unwinder decides for each JIT frame.

Meant for bug reports: one line per JIT frame per backtrace.""",
          "lldb": "print one line per JIT frame unwound, for bug reports"},
    set_doc="Set whether jit-unwind prints debugging messages.",
    show="jit-unwind debugging messages are {value}.", maintenance=True))

# GDB turns the Python frames of bt off with "disable frame-filter global jit-unwind".
declare(Setting(
    "python-frames", BOOL, True, debuggers=("lldb",),
    help={"lldb": "list under each eval-loop and JIT frame of bt the Python frames it "
                  "runs, as [py] frames with their file and line"}))

# bt names JIT frames through frame-format: in an LLDB without frame providers
# (lldb-19) all of them; with providers (LLDB 22+) only those in code LLDB's own JIT
# loader has a module for (CPython 3.15's traces), which LLDB names from that module.
declare(Setting(
    "frame-format", BOOL, True, debuggers=("lldb",),
    help={"lldb": "name JIT frames in code LLDB's JIT loader knows (CPython 3.15's "
                  "traces) in bt through LLDB's frame-format and thread-format settings; "
                  "off gives both their values back",
          "lldb-without-providers": "name JIT frames in bt through LLDB's frame-format "
                                    "and thread-format settings (this LLDB has no frame "
                                    "providers); off gives both their values back"}))

declare(Setting(
    "symbol-file", BOOL, True,
    help={"gdb": """Whether jit-unwind gives GDB a symbol file for the JIT code of each stop.

When on (the default), the named JIT functions of the process (perf map entries,
CPython's JIT executors) are written to a small ELF file in a private temporary
directory and loaded with "add-symbol-file FILE -o 0", so that GDB names them
everywhere: frame lines after "frame N" or "up", "info symbol", "x/i", "disassemble",
"break *'NAME'" (quote names with colons or spaces).  The file holds names and
addresses only: no code (the bytes stay the process's) and no unwind rules
(jit-unwind's unwinder, which GDB asks first, unwinds JIT frames).  It is replaced
when the JIT code changes and removed when the process exits or GDB quits.
"info jit-regions" marks the regions it holds.  Off unloads it.""",
          # LLDB: its own unwinder goes through the code the file has .eh_frame for;
          # with frame providers, the provider's walk takes LLDB's frames again where
          # they meet its own (lldb/symfile.py drops a walk made before the module came).
          "lldb": "give LLDB a module naming the JIT functions of each stop (perf map, "
                  "jitdump, CPython's JIT executors), so image lookup, disassemble and "
                  "breakpoints name them"},
    set_doc="Set whether jit-unwind loads a symbol file for JIT code.",
    show="Loading a symbol file for JIT code is {value}."))

declare(Setting(
    "jitdump", PATH, "",
    help={"gdb": """The perf jitdump file of the process, when it is not where jit-unwind looks.

A JIT that writes a jitdump (CPython -X perf_jit, V8 --perf-prof, Java agents) records
each function's name, code and unwind table in jit-PID.dump.  jit-unwind looks for the
file the process has mapped, then /tmp/jit-PID.dump, the process's working directory
and perf's copies under ~/.debug/jit; this path is tried first.  The file's pid must be
the process's.  "set jit-unwind jitdump" without a path goes back to looking alone.""",
          "lldb": "the perf jitdump file (jit-PID.dump) to read first, when it is not "
                  "where jit-unwind looks (the process's mapping of it, /tmp, the working "
                  "directory, ~/.debug/jit); `auto` goes back to looking alone"},
    set_doc="Set the perf jitdump file (jit-PID.dump) jit-unwind reads.",
    show_doc="Show the perf jitdump file jit-unwind is told to read.",
    show="jit-unwind reads the jitdump file {value} first.",
    show_unset="jit-unwind finds the jitdump file itself.", apply=_use_jitdump,
    check=_readable_file))
