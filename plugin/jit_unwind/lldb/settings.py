"""The settings of jit-unwind in LLDB (``jit-unwind NAME on|off``) and the debug log:
what GDB's ``set jit-unwind show-method/debug`` are, plus ``python-frames`` (GDB turns
those off with ``disable frame-filter global jit-unwind``)."""

import sys

# name -> (value, help)
SETTINGS = {
    "show-method": [False, "suffix each JIT frame in bt with the strategy that unwound it, "
                           "e.g. [via frame-pointer] (jitdump-cfi, prologue, "
                           "prologue-search, frame-pointer, entry-record, stack-scan)"],
    "debug": [False, "print one line per JIT frame unwound, for bug reports"],
    "python-frames": [True, "list under each eval-loop and JIT frame of bt the Python "
                            "frames it runs, as [py] frames with their file and line"],
    # None: the default, which depends on the LLDB (symfile.is_enabled).
    "symbol-file": [None, "add a module (a small ELF: one symbol per JIT function, "
                          ".eh_frame for trampolines and shims) for the JIT code of each "
                          "stop, so that image lookup -a, disassemble and frame select "
                          "name JIT functions; replaced when the JIT code changes. "
                          "Default: on in LLDB without frame providers (19), off with "
                          "them (22+: LLDB's unwind through the file's .eh_frame and the "
                          "provider's walk can disagree)"],
}

# Settings that take a path rather than on|off: name -> (value, help).
PATHS = {
    "jitdump": [None, "PATH: the perf jitdump file (jit-PID.dump) to read first, when "
                      "it is not where jit-unwind looks (the file the process mapped, "
                      "/tmp, the process's working directory, ~/.debug/jit); its pid "
                      "must be the process's. Without PATH, jit-unwind looks alone"],
}


def setting(name: str) -> bool:
    return bool(SETTINGS[name][0])


def raw_setting(name: str):
    """The value as set: None for a setting left at its default."""
    return SETTINGS[name][0]


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
