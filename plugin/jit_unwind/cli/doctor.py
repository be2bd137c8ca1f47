"""``jit-unwind doctor``: which debuggers are here, the Python each embeds, whether the
plugin's dependencies import there, and whether attaching is allowed; each problem with
the command that fixes it.  Always exits 0: it reports, it does not judge."""

import shutil
import subprocess
from typing import List, Optional, Tuple

from .attach import PTRACE_SCOPE, ptrace_scope
from .debuggers import beside_python, debugger_env, Debugger

TIMEOUT = 60
# Printed by the debugger's Python: its version, then each dependency's state.
_PROBE = ("import sys\n"
          "print('version', sys.version.split()[0])\n"
          "for name in ('elftools', 'tabulate'):\n"
          "    try:\n"
          "        __import__(name); print(name, 'ok')\n"
          "    except Exception as error:\n"
          "        print(name, 'missing')\n")
_APT = {"elftools": "python3-pyelftools", "tabulate": "python3-tabulate"}
_PIP = {"elftools": "pyelftools", "tabulate": "tabulate"}


def add_parser(subparsers, epilog: str) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check the debuggers, their Pythons and ptrace", epilog=epilog,
        description="Say which debuggers jit-unwind finds, which Python each embeds, "
                    "whether pyelftools and tabulate import there and whether attaching "
                    "to processes is allowed, with the command that fixes each problem.")
    parser.set_defaults(run=run)


def debuggers() -> List[Tuple[str, Optional[Debugger]]]:
    """(label, debugger or None when absent) for each debugger the CLI can use."""
    def found(kind, path):
        return Debugger(kind, path) if path else None
    return [("gdb", found("gdb", shutil.which("gdb"))),
            ("gdb18 (gdb-for-pwndbg beside this Python)", found("gdb", beside_python("gdb"))),
            ("lldb", found("lldb", shutil.which("lldb") or beside_python("lldb"))),
            ("lldb-19", found("lldb", shutil.which("lldb-19")))]


def probe(debugger: Debugger) -> Tuple[Optional[str], List[str], str]:
    """(the embedded Python's version, the dependencies missing there, an error)."""
    if debugger.kind == "gdb":
        argv = [debugger.path, "-nx", "-batch", "-ex", f"python exec({_PROBE!r})"]
    else:
        argv = [debugger.path, "--no-lldbinit", "-b", "-o", f"script exec({_PROBE!r})"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                stdin=subprocess.DEVNULL, timeout=TIMEOUT,
                                env=debugger_env(debugger))
    except (OSError, subprocess.SubprocessError) as error:
        return None, [], str(error)
    version = None
    missing = []
    for line in result.stdout.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == "version":
            version = words[1]
        elif len(words) == 2 and words[1] == "missing":
            missing.append(words[0])
    error = "" if version else (result.stderr.strip().splitlines() or ["no Python"])[-1]
    return version, missing, error


def _fix(debugger: Debugger, version: str, package: str) -> str:
    if debugger.path.startswith("/usr/"):
        return f"apt-get install {_APT[package]}"
    return f"pip install {_PIP[package]} (into the Python {version} this debugger embeds)"


def run(options) -> int:
    problems = 0
    for label, debugger in debuggers():
        if debugger is None:
            print(f"{label}: not found")
            continue
        version, missing, error = probe(debugger)
        if version is None:
            print(f"{label}: {debugger.path}, no usable Python: {error}")
            problems += 1
            continue
        print(f"{label}: {debugger.path}, Python {version}")
        for package in ("elftools", "tabulate"):
            state = "missing" if package in missing else "ok"
            fix = f"  fix: {_fix(debugger, version, package)}" if package in missing else ""
            print(f"  {_PIP[package]}: {state}{fix}")
            problems += package in missing
    scope = ptrace_scope()
    if not scope:
        print(f"ptrace: allowed ({PTRACE_SCOPE} absent: no Yama restriction)")
    elif scope == "0":
        print("ptrace: allowed (Yama ptrace_scope 0)")
    else:
        problems += 1
        print(f"ptrace: Yama ptrace_scope {scope}, attach needs root"
              "  fix: sysctl kernel.yama.ptrace_scope=0")
    print(f"{problems} problem(s)" if problems else "no problems")
    return 0
