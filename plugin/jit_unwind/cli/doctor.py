"""``jit-unwind doctor``: which debuggers are here, the Python each embeds, whether the
plugin and its dependencies import there, whether ~/.gdbinit and ~/.lldbinit load it,
whether attaching is allowed, and the perf maps and jitdumps on this machine; each
problem with the command that fixes it.  Exit status 0 when it found no problem, 1
otherwise.  The debuggers are asked at the same time, so that it takes about as long
as the slowest one starts."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

from ..loaders import paths as loader_paths
from ..liveread.refusal import PTRACE_SCOPE, ptrace_scope
from .debuggers import beside_python, debugger_env, Debugger
from .errors import FAILED, OK
from .install import init_file, is_ours

# What only `doctor` runs (concurrent.futures, the perf-map reader) is imported when it
# runs: every other subcommand imports this module for its parser.

TIMEOUT = 20
PATHS_PY = Path(loader_paths.__file__).resolve()
# Run by the debugger's Python: the plugin's own path set-up (what gdb_init.py and
# lldb_init.py do), then its version, prefix and each dependency's state.
_PROBE = ("import sys, importlib.util\n"
          "print('version', sys.version.split()[0])\n"
          "print('prefix', sys.prefix)\n"
          "try:\n"
          "    spec = importlib.util.spec_from_file_location('_jit_unwind_paths', {paths!r})\n"
          "    module = importlib.util.module_from_spec(spec)\n"
          "    spec.loader.exec_module(module)\n"
          "    module.add_paths()\n"
          "    print('plugin ok')\n"
          "except Exception as error:\n"
          "    print('plugin-error', type(error).__name__, error)\n"
          "for name in ('elftools', 'tabulate'):\n"
          "    try:\n"
          "        __import__(name); print(name, 'ok')\n"
          "    except Exception:\n"
          "        print(name, 'missing')\n")
_APT = {"elftools": "python3-pyelftools", "tabulate": "python3-tabulate"}
_PIP = {"elftools": "pyelftools", "tabulate": "tabulate"}
# gdb18 and lldb are looked for beside the Python running jit-unwind: installed by it.
_INSTALL = {"gdb": "apt-get install gdb",
            "gdb18": f"{sys.executable} -m pip install gdb-for-pwndbg",
            "lldb": f"{sys.executable} -m pip install lldb-for-pwndbg",
            "lldb-19": "apt-get install lldb-19 python3-lldb-19"}
MAX_LISTED = 20  # perf maps and jitdumps listed; the rest are counted
CAP_SYS_PTRACE = 19


def add_parser(subparsers, epilog: str) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check the debuggers, their Pythons, init files, ptrace, perf maps",
        epilog=epilog,
        description="Say which debuggers jit-unwind finds, which Python each embeds, "
                    "whether the plugin, pyelftools and tabulate import there, whether "
                    "~/.gdbinit and ~/.lldbinit load the plugin, whether attaching to "
                    "processes is allowed, and which perf maps and jitdumps are present, "
                    "with the command that fixes each problem.  Exit status 0: no "
                    "problem found; 1: at least one.")
    parser.set_defaults(run=run)


def debuggers() -> List[Tuple[str, str, Optional[Debugger]]]:
    """(label, key of _INSTALL, debugger or None when absent) for each debugger the CLI
    can use."""
    def found(kind, path):
        return Debugger(kind, path) if path else None
    return [("gdb", "gdb", found("gdb", shutil.which("gdb"))),
            ("gdb18 (gdb-for-pwndbg beside this Python)", "gdb18",
             found("gdb", beside_python("gdb"))),
            ("lldb", "lldb", found("lldb", shutil.which("lldb") or beside_python("lldb"))),
            ("lldb-19", "lldb-19", found("lldb", shutil.which("lldb-19")))]


class Probe:
    def __init__(self, version: Optional[str] = None, prefix: str = "",
                 plugin_error: str = "", missing: Optional[List[str]] = None,
                 error: str = ""):
        self.version = version
        self.prefix = prefix
        self.plugin_error = plugin_error
        self.missing: List[str] = missing if missing is not None else []
        self.error = error


def probe(debugger: Debugger) -> Probe:
    """What the debugger's embedded Python says about itself and the plugin."""
    code = _PROBE.replace("{paths!r}", repr(str(PATHS_PY)))
    if debugger.kind == "gdb":
        argv = [debugger.path, "-nx", "-batch", "-iex", "set debuginfod enabled off",
                "-ex", f"python exec({code!r})"]
    else:
        argv = [debugger.path, "--no-lldbinit", "-b", "-o", f"script exec({code!r})"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                stdin=subprocess.DEVNULL, timeout=TIMEOUT,
                                env=debugger_env(debugger))
    except (OSError, subprocess.SubprocessError) as error:
        return Probe(error=str(error))
    found = Probe()
    for line in result.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "version":
            found.version = rest
        elif word == "prefix":
            found.prefix = rest
        elif word == "plugin-error":
            found.plugin_error = rest
        elif rest == "missing":
            found.missing.append(word)
    if not found.version:
        found.error = (result.stderr.strip().splitlines() or ["no Python"])[-1]
    return found


def pip_fix(debugger: Debugger, found: Probe, package: str) -> str:
    """The command that installs ``package`` where this debugger's Python finds it."""
    if debugger.path.startswith("/usr/") and found.prefix == "/usr":
        return f"apt-get install {_APT[package]}"
    version = found.version or ""  # (doctor asks only for a Python that gave its version)
    major_minor = ".".join(version.split(".")[:2])
    interpreter = Path(found.prefix) / "bin" / f"python{major_minor}"
    if interpreter.exists():
        return f"{interpreter} -m pip install {_PIP[package]}"
    return (f"pip install {_PIP[package]} (into the Python {found.version} at "
            f"{found.prefix}, the one {debugger.path} embeds)")


class Report:
    """Lines for the user, and the count of problems among them."""

    def __init__(self):
        self.problems = 0

    def ok(self, text: str) -> None:
        print(text)

    def problem(self, text: str, fix: str) -> None:
        self.problems += 1
        print(f"{text}\n    fix: {fix}")


def report_debuggers(report: Report) -> None:
    found = debuggers()
    present = [debugger for _label, _key, debugger in found if debugger]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max(1, len(present))) as pool:
        probes = dict(zip((id(debugger) for debugger in present),
                          pool.map(probe, present)))
    for label, key, debugger in found:
        if debugger is None:
            if key == "gdb":
                report.problem("gdb: not found (the debugger every subcommand runs by "
                               "default)", _INSTALL[key])
            else:
                report.ok(f"{label}: not found (optional; to add it: {_INSTALL[key]})")
            continue
        result = probes[id(debugger)]
        if result.version is None:
            report.problem(f"{label}: {debugger.path}, no usable Python: {result.error}",
                           f"a {debugger.kind} built with Python support ({_INSTALL[key]})")
            continue
        report.ok(f"{label}: {debugger.path}, Python {result.version} ({result.prefix})")
        if result.plugin_error:
            report.problem(f"  jit_unwind: does not import there: {result.plugin_error}",
                           "pip install . (from the jit-unwind source tree)")
        for package in ("elftools", "tabulate"):
            if package in result.missing:
                report.problem(f"  {_PIP[package]}: missing",
                               pip_fix(debugger, result, package))
            else:
                report.ok(f"  {_PIP[package]}: ok")


def loading_lines(kind: str) -> List[str]:
    """The lines of ~/.gdbinit (~/.lldbinit) that load a jit-unwind: the installed
    package's loader (``jit-unwind install``) or a source tree's gdb_init.py."""
    path = init_file(kind)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    verb, loader = (("source", "gdb_init.py") if kind == "gdb"
                    else ("command script import", "lldb_init.py"))
    return [line.strip() for line in lines
            if line.strip().startswith(verb + " ") and line.strip().endswith(loader)]


def report_init_files(report: Report) -> None:
    for kind in ("gdb", "lldb"):
        path = init_file(kind)
        lines = loading_lines(kind)
        if not lines:
            report.ok(f"{path}: does not load jit-unwind (optional; to load it in "
                      f"every {kind}: jit-unwind install --{kind})")
            continue
        for line in lines:
            loader = line.split()[-1]
            if Path(os.path.expanduser(loader)).is_file():
                report.ok(f"{path}: loads jit-unwind: {line}")
            else:
                fix = f"jit-unwind install --{kind}"
                if not is_ours(line, kind):  # a source tree's: install keeps it
                    fix = f"delete that line from {path}, then {fix}"
                report.problem(f"{path}: loads {loader}, which does not exist "
                               f"(every {kind} start says so)", fix)
        if len(lines) > 1:
            report.problem(f"{path}: loads jit-unwind {len(lines)} times",
                           f"jit-unwind install --{kind} (keeps one line; remove the "
                           "others by hand)")


def _has_ptrace_capability() -> Optional[bool]:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def report_ptrace(report: Report) -> None:
    scope = ptrace_scope()
    if not scope:
        report.ok(f"ptrace: allowed ({PTRACE_SCOPE} absent: no Yama restriction)")
    elif scope == "0":
        report.ok("ptrace: allowed (Yama ptrace_scope 0)")
    elif scope == "3":
        report.problem("ptrace: Yama ptrace_scope 3: attaching is disabled until reboot",
                       "reboot, then: echo 0 > " + PTRACE_SCOPE + " (as root)")
    else:
        who = "a parent to trace its children" if scope == "1" else "root"
        report.problem(f"ptrace: Yama ptrace_scope {scope}: only {who} may attach "
                       "(jit-unwind attach, gdb -p)",
                       f"echo 0 > {PTRACE_SCOPE} (as root), or run jit-unwind as root")
    if os.geteuid() == 0 and _has_ptrace_capability() is False:
        report.problem("ptrace: root without CAP_SYS_PTRACE (a container?): attaching "
                       "to processes may be refused",
                       "docker run --cap-add=SYS_PTRACE ...")


def report_live_read(report: Report) -> None:
    """Whether ``attach --debugger none`` can work here, tried on a child process."""
    from ..liveread.probe import probe
    problems = probe()
    for text, fix in problems:
        report.problem(f"live read without a debugger (attach --debugger none): {text}", fix)
    if problems:
        return
    scope = ptrace_scope()
    capable = _has_ptrace_capability()
    if scope == "3":
        reach = "no process (Yama ptrace_scope 3)"
    elif capable:
        reach = "any process (CAP_SYS_PTRACE)"
    elif os.geteuid() == 0:
        reach = "processes holding no capability it lacks (root without CAP_SYS_PTRACE)"
    elif scope in ("1", "2"):
        reach = "only its own children (Yama ptrace_scope " + scope + ")"
    else:
        reach = "your own processes"
    report.ok("live read without a debugger (attach --debugger none): ptrace and "
              f"process_vm_readv work; it may read {reach}")


def _size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size // 1024} KiB"


def _file_line(file, now: float) -> str:
    """``file``: a jit_files.JitFile."""
    age = int(now - file.mtime)
    when = f"{age // 3600} h ago" if age >= 3600 else f"{age // 60} min ago"
    state = "running" if file.running else "exited (its cores still need the file)"
    return f"  {file.path}  {_size(file.size)}, written {when}, pid {file.pid} {state}"


def report_jit_files(report: Report) -> None:
    from .jit_files import jit_files
    files = jit_files()
    where = "/tmp, this directory, ~/.debug/jit"
    if not files:
        report.ok(f"perf maps and jitdumps: none ({where}); a JIT writes one when asked "
                  "(CPython: -X perf or -X perf_jit)")
        return
    running = sum(file.running for file in files)
    report.ok(f"perf maps and jitdumps ({where}): {len(files)}, "
              f"{running} of running processes")
    now = time.time()
    for file in files[:MAX_LISTED]:
        if file.stale:
            report.problem(f"  {file.path}: left by an earlier process with pid {file.pid} "
                           "(older than the process running now): the plugin ignores it "
                           "for that process", f"rm {file.path}")
        else:
            report.ok(_file_line(file, now))
    stale_unlisted = [file for file in files[MAX_LISTED:] if file.stale]
    if len(files) > MAX_LISTED:
        report.ok(f"  ... and {len(files) - MAX_LISTED} more")
    for file in stale_unlisted:
        report.problem(f"  {file.path}: left by an earlier process with pid {file.pid}",
                       f"rm {file.path}")


def run(options) -> int:
    report = Report()
    report_debuggers(report)
    report_init_files(report)
    report_ptrace(report)
    report_live_read(report)
    report_jit_files(report)
    print(f"{report.problems} problem(s)" if report.problems else "no problems")
    return FAILED if report.problems else OK
