#!/usr/bin/env python3
"""What the plugin costs a debugger at each stop it makes without showing it (issue 34).

usage: python bench/stop_cost.py [--hits N] [--rounds N] [--debugger NAME]...

Cases, each run plain and with the plugin (``gdb_init.py`` / ``lldb_init.py``), whole
debugger runs in batch mode, ``--rounds`` alternating pairs, median ratio:

* c-ignore: tests/fixtures/stop_loop.c (no JIT code, no Python), a breakpoint on
  ``work`` ignored ``--hits`` times;
* c-condition: ``break work if n == HITS`` (LLDB: ``breakpoint set -n work -c``);
* c-next: ``next`` over the loop of main (``--hits`` calls);
* py-ignore: CPython 3.14 with its JIT (PYTHON_JIT=1), a hot loop calling os.getpid(),
  a breakpoint on ``os_getpid`` ignored ``--hits`` times.

Prints, per debugger and case, plain and plugin seconds, and plugin/plain per stop:
(plugin - plain) / stops added to one, with the stops' own cost taken as plain / stops
(the load of each debugger counts in both).  Debuggers: gdb13 (/usr/bin/gdb), gdb18
(.venv/bin/gdb), lldb23 (.venv/bin/lldb).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = ROOT / "build" / "stop_loop"
PYTHON = Path.home() / ".cache/jit-unwind/cpython-3.14.6-jit-x86_64-linux/bin/python3.14"
PY_LOOP = "import os\nfor _ in range({n}):\n    os.getpid()\n"
DEBUGGERS = {"gdb13": "/usr/bin/gdb", "gdb18": str(ROOT / ".venv/bin/gdb"),
             "lldb23": str(ROOT / ".venv/bin/lldb")}


def gdb_commands(case: str, hits: int):
    stop = {"c-ignore": ["break work", f"ignore 1 {hits}", "run"],
            "c-condition": [f"break work if n == {hits}", "run"],
            "c-next": ["break 13", "run", "next", "next"],
            "py-ignore": ["set breakpoint pending on", "break os_getpid",
                          f"ignore 1 {hits}", "run"]}[case]
    return stop + ["bt 3", "kill"]


def lldb_commands(case: str, hits: int):
    stop = {"c-ignore": ["breakpoint set -n work", f"breakpoint modify -i {hits} 1", "run"],
            "c-condition": [f"breakpoint set -n work -c 'n == {hits}'", "run"],
            "c-next": ["breakpoint set -f stop_loop.c -l 13", "run", "next", "next"],
            "py-ignore": ["breakpoint set -n os_getpid",
                          f"breakpoint modify -i {hits} 1", "run"]}[case]
    return stop + ["bt 3", "kill"]


def command(debugger: str, case: str, hits: int, plugin: bool, script: Path):
    path = DEBUGGERS[debugger]
    program = [str(PYTHON), str(script)] if case == "py-ignore" else [str(LOOP), str(hits + 10)]
    if debugger.startswith("lldb"):
        line = [path, "-b", "-x"]
        if plugin:
            line += ["-o", f"command script import {ROOT / 'lldb_init.py'}"]
        line += ["-o", f"target create {program[0]}",
                 "-o", "settings set -- target.run-args " + " ".join(program[1:])]
        for text in lldb_commands(case, hits):
            line += ["-o", text]
        return line
    line = [path, "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin:
        line += ["-x", str(ROOT / "gdb_init.py")]
    for text in gdb_commands(case, hits):
        line += ["-ex", text]
    return line + ["--args"] + program


def timed(line) -> float:
    env = dict(os.environ, PYTHON_JIT="1")
    start = time.perf_counter()
    subprocess.run(line, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, env=env, timeout=900)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--debugger", action="append", choices=sorted(DEBUGGERS))
    parser.add_argument("--case", action="append",
                        choices=["c-ignore", "c-condition", "c-next", "py-ignore"])
    args = parser.parse_args()
    if not LOOP.exists():
        subprocess.run(["make", "-C", str(ROOT), "build/stop_loop"], check=True)
    script = ROOT / "build" / "stop_cost_loop.py"
    script.write_text(PY_LOOP.format(n=args.hits * 5))
    print(f"{'debugger':8} {'case':12} {'plain s':>8} {'plugin s':>9} {'ratio':>6}")
    for debugger in args.debugger or list(DEBUGGERS):
        for case in args.case or ["c-ignore", "c-condition", "c-next", "py-ignore"]:
            if case == "py-ignore" and not PYTHON.exists():
                print(f"{debugger:8} {case:12} (no {PYTHON})")
                continue
            plain, plugin = [], []
            for _ in range(args.rounds):
                plain.append(timed(command(debugger, case, args.hits, False, script)))
                plugin.append(timed(command(debugger, case, args.hits, True, script)))
            ratio = statistics.median(b / a for a, b in zip(plain, plugin))
            print(f"{debugger:8} {case:12} {statistics.median(plain):8.2f} "
                  f"{statistics.median(plugin):9.2f} {ratio:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
