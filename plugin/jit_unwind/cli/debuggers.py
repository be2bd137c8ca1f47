"""Which debugger to run and how: its kind (gdb or lldb), its path, and the command line
that loads the plugin (the loaders shipped in ``jit_unwind/loaders``)."""

import os
import sys
from typing import List, Optional, Sequence

from .errors import FAILED, USAGE, CliError

# Paths as strings, shutil and subprocess imported where used: ``core --debugger none``
# runs no debugger, and pathlib, shutil and subprocess are ~10 ms of imports.
LOADERS = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))),
                       "loaders")
GDB_LOADER = os.path.join(LOADERS, "gdb_init.py")
LLDB_LOADER = os.path.join(LOADERS, "lldb_init.py")
CHOICES = "gdb|gdb18|lldb|none|PATH"
TIMEOUT = 600
# Printed by the debugger just before the stack, so that its own start-up chatter
# (core loading, threads found) stays out of what the user reads.
MARK = "@@jit-unwind-output@@"
END = "@@jit-unwind-end@@"  # and after it, before GDB's "detached"
# Set to 0 (or off, no) to keep GDB's index cache off in the batch runs.
INDEX_CACHE_ENV = "JIT_UNWIND_INDEX_CACHE"


class Debugger:
    # Not a dataclass: importing dataclasses (and inspect) is ~10 ms of every run.
    def __init__(self, kind: str, path: str):
        self.kind = kind  # "gdb" or "lldb"
        self.path = path

    def __repr__(self) -> str:
        return f"Debugger({self.kind!r}, {self.path!r})"


def beside_python(name: str) -> Optional[str]:
    """A program installed next to this Python (a venv's gdb-for-pwndbg or
    lldb-for-pwndbg wrapper)."""
    path = os.path.join(os.path.dirname(sys.executable), name)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def find_debugger(choice: str) -> Debugger:
    """The debugger ``--debugger CHOICE`` names; CliError when it is not installed."""
    import shutil
    if choice == "gdb":
        found = shutil.which("gdb")
        kind = "gdb"
    elif choice == "gdb18":
        found = beside_python("gdb")
        kind = "gdb"
    elif choice == "lldb":
        found = shutil.which("lldb") or beside_python("lldb") or shutil.which("lldb-19")
        kind = "lldb"
    else:
        found = shutil.which(choice) if os.sep not in choice else (
            choice if os.access(choice, os.X_OK) else None)
        kind = "lldb" if "lldb" in os.path.basename(choice) else "gdb"
    if not found:
        hint = {"gdb": "install it (apt-get install gdb)",
                "gdb18": "pip install gdb-for-pwndbg into this Python's environment",
                "lldb": "install it (apt-get install lldb-19 python3-lldb-19)"}
        raise CliError(f"debugger {choice!r} not found: "
                       f"{hint.get(choice, 'give the path of a gdb or lldb executable')}")
    return Debugger(kind, found)


def plugin_argv(debugger: Debugger) -> List[str]:
    """The debugger's command line up to its own commands: quiet, no init file, the
    plugin loaded."""
    if debugger.kind == "gdb":
        return [debugger.path, "-nx", "-q", "-iex", "set debuginfod enabled off",
                "-iex", "set pagination off", "-iex", "set width 0",
                "-iex", "set confirm off", "-x", str(GDB_LOADER)]
    return [debugger.path, "--no-lldbinit", "-o", f"command script import {LLDB_LOADER}"]


def batch_argv(debugger: Debugger, commands: Sequence[str], *, core: str = "",
               executable: str = "", pid: int = 0, debug_info: bool = True,
               sysroot: str = "") -> List[str]:
    """Run ``commands`` on a core or attached process, the MARK echoed before them.
    ``debug_info=False``: GDB reads the files' symbol tables but none of their DWARF
    (``--readnever``), all that ``py-mixed-bt --python-only`` needs of them.
    ``sysroot``: where the program's libraries are (GDB's ``set sysroot``; LLDB's
    ``platform select --sysroot``)."""
    argv = plugin_argv(debugger)
    if debugger.kind == "gdb":
        argv[1:1] = ["-batch", "-iex", "set style enabled off",  # no escapes in the pipe
                     *_symbol_reading(debug_info),
                     *(["-iex", f"set sysroot {sysroot}"] if sysroot else []),
                     *(_decompressed_debug_files(core, executable)
                       if debug_info and core and not sysroot else [])]
        argv += ["-ex", f"echo {MARK}\\n"]
        for command in commands:
            argv += ["-ex", command]
        argv += ["-ex", f"echo {END}\\n"]
        if pid:
            argv += ["-ex", "detach", "-p", str(pid)]
        else:
            argv += [executable, core]
        return argv
    argv[1:1] = ["-b", "--no-use-colors"]
    if sysroot:  # LLDB has no target.sysroot: the Linux platform takes one
        argv[1:1] = ["-O", f"platform select --sysroot {_lldb_quoted(sysroot)} remote-linux"]
    argv += ["-o", f"script print({MARK!r})"]
    for command in commands:
        argv += ["-o", command]
    if pid:
        argv += ["-o", "process detach", "-p", str(pid)]
        return argv
    # The core is loaded once the provider is on the target, not by ``lldb -c CORE``
    # before the plugin's import: see registration.load_core.
    load = ("script import jit_unwind.lldb.registration as registration; "
            f"registration.load_core(lldb.debugger, {core!r})")
    mark = argv.index(f"script print({MARK!r})") - 1
    argv[mark:mark] = ["-o", f"target create {_lldb_quoted(executable)}", "-o", load]
    return argv


def _lldb_quoted(argument: str) -> str:
    """One argument of an LLDB command, spaces and quotes kept."""
    return '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _symbol_reading(debug_info: bool) -> List[str]:
    """GDB's options for reading the program's symbols in a batch run.  Reading the
    DWARF of python and libc is most of a run's time (0.25 s of CPU for a CPython 3.14
    core): without DWARF when the command needs none, else through GDB's own index
    cache (``set index-cache``, one file per build ID under
    ``$XDG_CACHE_HOME/gdb``, by default ``~/.cache/gdb``), which spares the next run
    building the index again (0.10 s instead of 0.25 s) at a one-time cost for the
    first."""
    if not debug_info:  # nor the separate debug files' symbol tables (libc's: 13 ms)
        return ["--readnever", "-iex", "set debug-file-directory"]
    if os.environ.get(INDEX_CACHE_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return []
    return ["-iex", "set index-cache enabled on"]


def _decompressed_debug_files(core: str, executable: str) -> List[str]:
    """Options that let GDB read the core's libraries' debug files without inflating
    their DWARF at every run (``gdb_debug_files``)."""
    from .gdb_debug_files import gdb_options
    return gdb_options(core, executable)


def debugger_env(debugger: Debugger) -> dict:
    """The environment to run a debugger in: a Python path meant for this Python would
    break the debugger's own embedded one (lldb-19's, Debian GDB's).

    An LLDB that embeds a Python of its own (Debian's lldb-19: the system's
    libpython3.11) lets that Python find its prefix as a python started as ``python3``
    does, by the first ``python3`` on PATH: in an activated virtual environment that is
    the venv's, whose pyvenv.cfg then makes the venv its prefix, and the standard library
    of the Python the venv was made from its own (another build's, even another
    version's). PATH without the environments' directories keeps it on its own. An
    LLDB installed in this Python's environment (lldb-for-pwndbg) embeds this Python:
    its PATH is left alone."""
    env = dict(os.environ)
    if debugger.kind == "lldb":
        for name in ("PYTHONHOME", "PYTHONPATH"):
            env.pop(name, None)
        if not _in_environment(debugger.path):
            env["PATH"] = os.pathsep.join(
                entry for entry in env.get("PATH", "").split(os.pathsep)
                if not _in_environment(os.path.join(entry, "python3")))
            env.pop("VIRTUAL_ENV", None)
    return env


def _in_environment(path: str) -> bool:
    """``path`` is a program in a bin directory of a virtual or conda environment."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return (os.path.isfile(os.path.join(top, "pyvenv.cfg"))
            or os.path.isdir(os.path.join(top, "conda-meta")))


class BatchResult:
    def __init__(self, output: str, errors: str, status: int, whole: str):
        self.output = output  # what the commands printed, after MARK
        self.errors = errors  # the debugger's stderr
        self.status = status
        self.whole = whole  # stdout and stderr, for diagnosing failures


def run_batch(argv: List[str], debugger: Debugger) -> BatchResult:
    import subprocess
    try:
        result = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                stdin=subprocess.DEVNULL, timeout=TIMEOUT,
                                env=debugger_env(debugger))
    except subprocess.TimeoutExpired:
        raise CliError(f"{debugger.path} did not finish within {TIMEOUT} s", FAILED) from None
    except OSError as error:
        raise CliError(f"cannot run {debugger.path}: {error}", USAGE) from None
    stdout = result.stdout
    at = stdout.find(MARK + "\n")
    output = stdout[at + len(MARK) + 1:] if at >= 0 else ""
    output = output.split(END + "\n")[0]
    if debugger.kind == "lldb":
        output = _lldb_output(output)
    return BatchResult(output, result.stderr, result.returncode, stdout + result.stderr)


def _lldb_output(text: str) -> str:
    """LLDB echoes each ``-o`` command as ``(lldb) COMMAND``: the output of the first
    one after MARK, up to the next echo."""
    lines = text.splitlines(keepends=True)
    kept = []
    started = False
    for line in lines:
        if line.startswith("(lldb) "):
            if started:
                break
            started = True
            continue
        if started:
            kept.append(line)
    return "".join(kept)
