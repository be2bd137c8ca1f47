#!/usr/bin/env python3
"""What the plugin costs a debugger at each stop it makes without showing it (issue 34).

usage: python bench/stop_cost.py [--hits N] [--rounds N] [--debugger NAME]... [--case C]...

Cases, each run plain and with the plugin (``gdb_init.py`` / ``lldb_init.py``), whole
debugger runs in batch mode:

* c-ignore: tests/fixtures/stop_loop.c (no JIT code, no Python), a breakpoint on
  ``work`` ignored ``--hits`` times;
* c-condition: ``break work if n == HITS`` (LLDB: ``breakpoint set -n work -c``);
* c-next: ``next`` over the loop of main (``--hits`` calls);
* py-ignore: CPython 3.14 with its JIT (PYTHON_JIT=1), a hot loop calling os.getpid(),
  a breakpoint on ``os_getpid`` ignored ``--hits`` times;
* py-condition: the same loop, ``--hits`` calls, a breakpoint on ``os_getpid`` whose
  condition is never true.

Per stop: every case runs with ``--hits`` stops and with 10, in alternating pairs; the
cost of a stop is the difference between the two runs' times (the debugger's start, the
plugin's load and the last, shown stop cancel out), and the ratio printed is the
plugin's cost per stop over plain's, the median of ``--rounds`` pairs.  Debuggers:
gdb13 (/usr/bin/gdb), gdb18 (.venv/bin/gdb), lldb23 (.venv/bin/lldb).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = ROOT / "build" / "stop_loop"
PYTHON = Path.home() / ".cache/jit-unwind/cpython-3.14.6-jit-x86_64-linux/bin/python3.14"
PY_LOOP = "import os\nfor _ in range({n}):\n    os.getpid()\n"
DEBUGGERS = {"gdb13": "/usr/bin/gdb", "gdb18": str(ROOT / ".venv/bin/gdb"),
             "lldb23": str(ROOT / ".venv/bin/lldb")}
CASES = ["c-ignore", "c-condition", "c-next", "py-ignore", "py-condition"]
FEW = 10  # the stops of the short run


def gdb_commands(case: str, hits: int):
    stop = {"c-ignore": ["break work", f"ignore 1 {hits}", "run"],
            "c-condition": [f"break work if n == {hits}", "run"],
            "c-next": ["break 13", "run", "next", "next"],
            "py-ignore": ["set breakpoint pending on", "break os_getpid",
                          f"ignore 1 {hits}", "run"],
            "py-condition": ["set breakpoint pending on", "break os_getpid if module == 0",
                             "run"]}[case]
    return stop + ["bt 3", "kill"]


def lldb_commands(case: str, hits: int):
    stop = {"c-ignore": ["breakpoint set -n work", f"breakpoint modify -i {hits} 1", "run"],
            "c-condition": [f"breakpoint set -n work -c 'n == {hits}'", "run"],
            "c-next": ["breakpoint set -f stop_loop.c -l 13", "run", "next", "next"],
            "py-ignore": ["breakpoint set -n os_getpid",
                          f"breakpoint modify -i {hits} 1", "run"],
            "py-condition": ["breakpoint set -n os_getpid -c 'module == 0'", "run"]}[case]
    return stop + ["bt 3", "kill"]


def program(case: str, hits: int, scripts: Path):
    if not case.startswith("py-"):
        return [str(LOOP), str(hits + 10)]
    script = scripts / f"loop_{hits}.py"
    # py-ignore stops at the call after the ignored ones; py-condition never stops.
    script.write_text(PY_LOOP.format(n=hits + 10 if case == "py-ignore" else hits))
    return [str(PYTHON), str(script)]


def command(debugger: str, case: str, hits: int, plugin: bool, scripts: Path):
    path = DEBUGGERS[debugger]
    args = program(case, hits, scripts)
    if debugger.startswith("lldb"):
        line = [path, "-b", "-x"]
        if plugin:
            line += ["-o", f"command script import {ROOT / 'lldb_init.py'}"]
        line += ["-o", f"target create {args[0]}",
                 "-o", "settings set -- target.run-args " + " ".join(args[1:])]
        for text in lldb_commands(case, hits):
            line += ["-o", text]
        return line
    line = [path, "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    if plugin:
        line += ["-x", str(ROOT / "gdb_init.py")]
    for text in gdb_commands(case, hits):
        line += ["-ex", text]
    return line + ["--args"] + args


def timed(line) -> float:
    # The pip debuggers' wrappers set PYTHONHOME for their own Python; a CPython they
    # start must not inherit it.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONHOME"}
    env["PYTHON_JIT"] = "1"
    start = time.perf_counter()
    subprocess.run(line, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL, env=env, timeout=900)
    return time.perf_counter() - start


def per_stop(debugger: str, case: str, hits: int, plugin: bool, scripts: Path) -> float:
    """Seconds a stop costs: ``hits`` stops against FEW, in one pair of runs."""
    many = timed(command(debugger, case, hits, plugin, scripts))
    few = timed(command(debugger, case, FEW, plugin, scripts))
    return (many - few) / (hits - FEW)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hits", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--debugger", action="append", choices=sorted(DEBUGGERS))
    parser.add_argument("--case", action="append", choices=CASES)
    args = parser.parse_args()
    if not LOOP.exists():
        subprocess.run(["make", "-C", str(ROOT), "build/stop_loop"], check=True)
    print(f"{'debugger':8} {'case':13} {'plain ms/stop':>13} {'plugin ms/stop':>14} "
          f"{'ratio':>6}")
    with tempfile.TemporaryDirectory(prefix="jit-unwind-stop-cost-") as scripts:
        for debugger in args.debugger or list(DEBUGGERS):
            for case in args.case or CASES:
                if case.startswith("py-") and not PYTHON.exists():
                    print(f"{debugger:8} {case:13} (no {PYTHON})")
                    continue
                plain, plugin = [], []
                for _ in range(args.rounds):
                    plain.append(per_stop(debugger, case, args.hits, False, Path(scripts)))
                    plugin.append(per_stop(debugger, case, args.hits, True, Path(scripts)))
                ratio = statistics.median(b / a for a, b in zip(plain, plugin))
                print(f"{debugger:8} {case:13} {statistics.median(plain) * 1e3:13.3f} "
                      f"{statistics.median(plugin) * 1e3:14.3f} {ratio:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
