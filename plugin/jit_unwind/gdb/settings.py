"""``set/show jit-unwind …`` settings and the debug log."""

import gdb

from .state import STATE


class _Prefix(gdb.Command):
    def __init__(self, verb: str, doc: str):
        self.__doc__ = doc
        super().__init__(f"{verb} jit-unwind", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


class ShowMethod(gdb.Parameter):
    """Whether backtraces say how each JIT frame's caller was found.

When on, JIT frames carry a suffix such as "[via frame-pointer]" naming the strategy
that unwound them: jitdump-cfi, prologue, prologue-search, frame-pointer, entry-record
or stack-scan.
Frames in code without call frame information that the plugin unwound (hand-written
assembly, code built without unwind tables) carry it too, after their own name.
Callers found by the stack scan are always marked as a guess."""

    set_doc = "Set whether backtraces show how each JIT frame was unwound."
    show_doc = "Show whether backtraces show how each JIT frame was unwound."

    def __init__(self):
        super().__init__("jit-unwind show-method", gdb.COMMAND_STACK, gdb.PARAM_BOOLEAN)
        self.value = False

    def get_show_string(self, value):
        return f"Showing how JIT frames were unwound is {value}."


class Debug(gdb.Parameter):
    """Whether jit-unwind prints what its unwinder decides for each JIT frame.

Meant for bug reports: one line per JIT frame per backtrace."""

    set_doc = "Set whether jit-unwind prints debugging messages."
    show_doc = "Show whether jit-unwind prints debugging messages."

    def __init__(self):
        super().__init__("jit-unwind debug", gdb.COMMAND_MAINTENANCE, gdb.PARAM_BOOLEAN)
        self.value = False

    def get_show_string(self, value):
        return f"jit-unwind debugging messages are {value}."


class JitdumpPath(gdb.Parameter):
    """The perf jitdump file of the process, when it is not where jit-unwind looks.

A JIT that writes a jitdump (CPython -X perf_jit, V8 --perf-prof, Java agents) records
each function's name, code and unwind table in jit-PID.dump.  jit-unwind looks for the
file the process has mapped, then /tmp/jit-PID.dump, the process's working directory
and perf's copies under ~/.debug/jit; this path is tried first.  The file's pid must be
the process's.  "set jit-unwind jitdump" without a path goes back to looking alone."""

    set_doc = "Set the perf jitdump file (jit-PID.dump) jit-unwind reads."
    show_doc = "Show the perf jitdump file jit-unwind is told to read."

    def __init__(self):
        super().__init__("jit-unwind jitdump", gdb.COMMAND_STACK,
                         gdb.PARAM_OPTIONAL_FILENAME)
        self.value = ""

    def get_set_string(self):
        from ..regions import jitdump  # the jitdump reader is imported when first used
        jitdump.set_user_path(self.value or None)
        STATE.invalidate()
        gdb.invalidate_cached_frames()  # frames unwound without the file are stale
        return ""

    def get_show_string(self, value):
        if not value:
            return "jit-unwind finds the jitdump file itself."
        return f"jit-unwind reads the jitdump file {value} first."


class SymbolFile(gdb.Parameter):
    """Whether jit-unwind gives GDB a symbol file for the JIT code of each stop.

When on (the default), the named JIT functions of the process (perf map entries,
CPython's JIT executors) are written to a small ELF file in a private temporary
directory and loaded with "add-symbol-file FILE -o 0", so that GDB names them
everywhere: frame lines after "frame N" or "up", "info symbol", "x/i", "disassemble",
"break *'NAME'" (quote names with colons or spaces).  The file holds names and
addresses only: no code (the bytes stay the process's) and no unwind rules
(jit-unwind's unwinder, which GDB asks first, unwinds JIT frames).  It is replaced
when the JIT code changes and removed when the process exits or GDB quits.
"info jit-regions" marks the regions it holds.  Off unloads it."""

    set_doc = "Set whether jit-unwind loads a symbol file for JIT code."
    show_doc = "Show whether jit-unwind loads a symbol file for JIT code."

    def __init__(self):
        super().__init__("jit-unwind symbol-file", gdb.COMMAND_STACK, gdb.PARAM_BOOLEAN)
        self.value = True

    def get_set_string(self):
        from .symfile import refresh  # the setting takes effect now, not at the next stop
        refresh()
        return ""

    def get_show_string(self, value):
        return f"Loading a symbol file for JIT code is {value}."


_parameters = {}


def register_settings() -> None:
    _Prefix("set", "Settings of jit-unwind, which unwinds and names JIT frames.")
    _Prefix("show", "Show settings of jit-unwind, which unwinds and names JIT frames.")
    _parameters["show-method"] = ShowMethod()
    _parameters["debug"] = Debug()
    _parameters["jitdump"] = JitdumpPath()
    _parameters["symbol-file"] = SymbolFile()


def symbol_file_enabled() -> bool:
    parameter = _parameters.get("symbol-file")
    return bool(parameter is None or parameter.value)


def show_method() -> bool:
    parameter = _parameters.get("show-method")
    return bool(parameter is not None and parameter.value)


def debug_log(message) -> None:
    """Print ``message`` (a string, or a callable making one: built only when asked)
    when ``set jit-unwind debug on``."""
    parameter = _parameters.get("debug")
    if parameter is not None and parameter.value:
        text = message() if callable(message) else message
        gdb.write(f"jit-unwind: {text}\n")
