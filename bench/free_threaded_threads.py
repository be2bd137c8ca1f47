#!/usr/bin/env python3
"""py-mixed-bt --all-threads against pystack on a core of a free-threaded CPython.

usage: python bench/free_threaded_threads.py [--gdb PATH]... [--python PATH]
                                             [--threads N] [--depth N] [--reps N]

The core: a free-threaded CPython (default: the test interpreter 3.14t of
tests/jit_python.py) running ``--threads`` threads, each ``--depth`` Python calls deep,
all waiting on one barrier while the main thread raises SIGTRAP; GDB's ``gcore`` writes
it.  On it, each tool once per round, the rounds alternating the order:
``py-mixed-bt --all-threads`` (GDB with gdb_init.py), GDB loading the core with no
command (the floor of any GDB command), ``pystack core CORE PYTHON`` and
``pystack core CORE PYTHON --native`` (pip ``pystack``, from this Python's
environment, PATH or /tmp/pystack-venv; rows missing when it is not installed), and
``jit-unwind core --debugger none`` (the same command without a debugger, plain and
``--python-only``; this checkout's plugin, run by this Python).

Figures are medians of ``--reps`` rounds: wall and CPU of the whole process (loading the
core included) and, for GDB, of the command alone.  Every output must list each
thread's recursion, or the script stops.  Goal (issue 17): py-mixed-bt --all-threads
costs less CPU than ``pystack core`` on the same core (the last column: GDB's command
alone, the CLI's whole process).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bt_overhead import (GDB_FLAGS, PLUGIN, compile_plugin, default_gdbs,
                         gdb_version, markdown_table, positive_int)
from cli_vs_pystack import default_pystack
from py_mixed_bt import clean_environment, gdb_tool, measure_rounds, ms

FUNCTION = "nested_call"
PROGRAM = f"""
import os, signal, sys, threading
threads, depth = int(sys.argv[1]), int(sys.argv[2])
ready = threading.Barrier(threads + 1)
done = threading.Event()
def {FUNCTION}(n):
    if n == 0:
        ready.wait()
        done.wait()
        return 0
    return {FUNCTION}(n - 1) + 1
workers = [threading.Thread(target={FUNCTION}, args=(depth - 1,), name=f"worker-{{i}}")
           for i in range(threads)]
for worker in workers:
    worker.start()
ready.wait()
os.kill(os.getpid(), signal.SIGTRAP)
done.set()
"""


def default_python() -> Optional[str]:
    try:
        from tests.jit_python import fixture_python
        return str(fixture_python("3.14t"))
    except (ImportError, AssertionError):
        return None


def make_core(gdb: str, python: str, threads: int, depth: int, scratch: Path) -> Path:
    script, core = scratch / "threads.py", scratch / "threads.core"
    script.write_text(PROGRAM)
    completed = subprocess.run(
        [gdb, *GDB_FLAGS, "-ex", "run", "-ex", f"gcore {core}", "-ex", "kill",
         "--args", python, str(script), str(threads), str(depth)],
        env=clean_environment(), capture_output=True, text=True, errors="replace",
        timeout=300)
    if not core.exists():
        raise RuntimeError(f"no core written:\n{completed.stdout[-2000:]}"
                           f"{completed.stderr[-2000:]}")
    return core


def tools(gdb: str, python: str, core: Path) -> Dict[str, List[str]]:
    found = {
        "py-mixed-bt --all-threads": gdb_tool(gdb, ["-x", str(PLUGIN)],
                                              "py-mixed-bt --all-threads", python, core),
        "GDB alone (no command)": gdb_tool(gdb, ["-x", str(PLUGIN)], "echo", python, core),
    }
    # The same py-mixed-bt --all-threads without a debugger (this checkout's CLI).
    plugin = Path(__file__).resolve().parent.parent / "plugin"
    cli = ["env", f"PYTHONPATH={plugin}", sys.executable, "-m", "jit_unwind", "core",
           "--debugger", "none"]
    found["jit-unwind core --debugger none"] = [*cli, str(core), python]
    found["jit-unwind core --python-only --debugger none"] = \
        [*cli, "--python-only", str(core), python]
    pystack = default_pystack()
    if pystack:
        found["pystack core"] = [pystack, "core", str(core), python]
        found["pystack core --native"] = [pystack, "core", str(core), python, "--native"]
    return found


def measure(gdb: str, python: str, core: Path, threads: int, depth: int,
            reps: int) -> Dict[str, Dict]:
    return measure_rounds(tools(gdb, python, core), reps, threads * depth,
                          lambda output: output.count(FUNCTION), FUNCTION)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gdb", action="append", metavar="PATH")
    parser.add_argument("--python", default=default_python(),
                        help="a free-threaded CPython (default: the test interpreter 3.14t)")
    parser.add_argument("--threads", type=positive_int, default=32)
    parser.add_argument("--depth", type=positive_int, default=50)
    parser.add_argument("--reps", type=positive_int, default=5)
    args = parser.parse_args(argv)
    if not args.python:
        sys.exit("no free-threaded CPython: run tests/fixtures/build_cpython.sh 3.14t "
                 "or pass --python PATH")
    compile_plugin()
    gdbs = args.gdb or default_gdbs()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="free-threaded-bench-") as scratch:
        core = make_core(gdbs[0], args.python, args.threads, args.depth, Path(scratch))
        for gdb in gdbs:
            version = gdb_version(gdb)
            print(f"measuring {version} ({gdb}) ...", file=sys.stderr, flush=True)
            results = measure(gdb, args.python, core, args.threads, args.depth, args.reps)
            rival = results.get("pystack core")
            rows = []
            for name, r in results.items():
                # Ours against pystack core's whole process: GDB's command alone (GDB's
                # reading of the core is the floor of any GDB command), the CLI whole.
                ours = r["command"] if name.startswith("py-mixed-bt") else r["cpu"]
                verdict = "" if rival is None or name.startswith(("pystack", "GDB alone")) \
                    else ("yes" if ours < rival["cpu"] else "no")
                rows.append([version, name, ms(r["wall"]), ms(r["cpu"]), ms(r["command"]),
                             verdict])
            print(f"\n{version}, core of {args.python}: {args.threads} threads x "
                  f"{args.depth} Python frames, medians of {args.reps} rounds\n")
            print(markdown_table(["gdb", "tool", "whole wall ms", "whole CPU ms",
                                  "command CPU ms", "less CPU than pystack core"], rows))
        if not any(name.startswith("pystack") for name in results):
            print("\npystack is not installed (pip install pystack): its rows are missing")
    print(f"\n{time.perf_counter() - started:.0f} s on the machine's CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
