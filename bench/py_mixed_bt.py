#!/usr/bin/env python3
"""py-mixed-bt against its peers on one core file of a 1,000-deep Python recursion.

usage: python bench/py_mixed_bt.py [--gdb PATH]... [--python PATH] [--depth N] [--reps N]

The core: CPython (default: pyenv's 3.12.1, whose python3.12-gdb.py lies beside its
binary) recursing ``--depth`` Python calls deep, then raising SIGTRAP; GDB's ``gcore``
writes it.  On it, each tool once per round, the rounds alternating the order:

* ``py-mixed-bt`` and ``py-mixed-bt --python-only`` (GDB with gdb_init.py);
* ``py-bt``: CPython's own GDB extension, python3.X-gdb.py of the same build;
* ``pystack core CORE PYTHON --native`` and ``pystack core CORE PYTHON`` (pip
  ``pystack``, run from this Python's environment; skipped when it is not installed).

Figures: the whole process (wall and CPU of the tool and its children, from start to
end: loading the core included), and for the GDB commands also the command alone (CPU
of GDB around it, the core already loaded).  Medians over ``--reps`` rounds.  Every
output must list at least ``--depth`` frames of the recursion, or the script stops.
Goals: py-mixed-bt faster than py-bt and than ``pystack --native``; ``--python-only``
faster than ``pystack`` (no native frames).  The verdict columns, on each rival's row,
compare CPU: whole process to whole process, and our command alone to py-bt's command
alone or to pystack's whole process (GDB's own loading of the core is a floor no GDB
command can go below: the "GDB alone" row).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_overhead import (GDB_FLAGS, PLUGIN, compile_plugin, default_gdbs,
                         gdb_version, markdown_table, positive_int)

FUNCTION = "recurse_here"
PROGRAM = f"""
import os, signal, sys
sys.setrecursionlimit(100000)
def {FUNCTION}(n):
    if n == 0:
        os.kill(os.getpid(), signal.SIGTRAP)
        return 0
    return {FUNCTION}(n - 1) + 1
{FUNCTION}(int(sys.argv[1]))
"""
CMD_TIME = "CMD-CPU-SECONDS"


def default_python() -> Optional[str]:
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              errors="replace").stdout.strip()
    except OSError:
        root = str(Path.home() / ".pyenv")
    path = Path(root) / "versions" / "3.12.1" / "bin" / "python3.12"
    return str(path) if path.exists() else None


def clean_environment() -> Dict[str, str]:
    """No PYTHONHOME/PYTHONPATH: they would break Debian's GDB and the inferior."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}


def make_core(gdb: str, python: str, depth: int, scratch: Path) -> Path:
    script, core = scratch / "recursion.py", scratch / "recursion.core"
    script.write_text(PROGRAM)
    completed = subprocess.run(
        [gdb, *GDB_FLAGS, "-ex", "run", "-ex", f"gcore {core}", "-ex", "kill",
         "--args", python, str(script), str(depth)],
        env=clean_environment(), capture_output=True, text=True, errors="replace", timeout=300)
    if not core.exists():
        raise RuntimeError(
            f"no core written:\n{completed.stdout[-2000:]}{completed.stderr[-2000:]}")
    return core


def gdb_helper(python: str) -> Optional[Path]:
    """python3.X-gdb.py beside the binary (pyenv), or in Tools/gdb of its build."""
    binary = Path(python).resolve()
    for candidate in (binary.with_name(binary.name + "-gdb.py"),
                      binary.parent / "python-gdb.py"):
        if candidate.exists():
            return candidate
    return None


def timed(argv: List[str]) -> Tuple[float, float, str]:
    """Wall and CPU seconds (the process and its children) and its stdout."""
    before = os.times()
    start = time.perf_counter()
    completed = subprocess.run(argv, env=clean_environment(), capture_output=True, text=True,
                               errors="replace", timeout=600)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user + after.children_system
           - before.children_user - before.children_system)
    return wall, cpu, completed.stdout + completed.stderr


def gdb_tool(gdb: str, setup: List[str], command: str, python: str, core: Path) -> List[str]:
    return [gdb, *GDB_FLAGS, *setup,
            "-ex", "python import time as _t; _c = _t.process_time()",
            "-ex", command,
            "-ex", f"python print('{CMD_TIME}', _t.process_time() - _c)",
            python, str(core)]


def command_seconds(output: str) -> Optional[float]:
    match = re.search(rf"^{CMD_TIME} (\S+)$", output, re.M)
    return float(match.group(1)) if match else None


def count_frames(output: str) -> int:
    return len(re.findall(rf"\b{FUNCTION}\b", output))


def tools(gdb: str, python: str, core: Path) -> Dict[str, List[str]]:
    found = {
        "py-mixed-bt": gdb_tool(gdb, ["-x", str(PLUGIN)], "py-mixed-bt", python, core),
        "py-mixed-bt --python-only": gdb_tool(gdb, ["-x", str(PLUGIN)],
                                              "py-mixed-bt --python-only", python, core),
    }
    # GDB reading the interpreter's symbols and the core, running nothing: the floor
    # of every GDB row's whole-process time.
    found["GDB alone (no command)"] = gdb_tool(gdb, ["-x", str(PLUGIN)], "echo", python, core)
    helper = gdb_helper(python)
    if helper is not None:
        found["py-bt (python-gdb.py)"] = gdb_tool(gdb, ["-ex", f"source {helper}"], "py-bt",
                                                  python, core)
    pystack = shutil.which("pystack", path=str(Path(sys.executable).parent)) \
        or shutil.which("pystack")
    if pystack:
        found["pystack core --native"] = [pystack, "core", str(core), python, "--native"]
        found["pystack core"] = [pystack, "core", str(core), python]
    return found


def measure(gdb: str, python: str, core: Path, depth: int, reps: int) -> Dict[str, Dict]:
    # pystack and py-mixed-bt name each frame once; py-bt twice (name, source).
    return measure_rounds(tools(gdb, python, core), reps, depth, count_frames, FUNCTION)


def measure_rounds(argvs: Dict[str, List[str]], reps: int, expected: int,
                   count: Callable[[str], int], function: str) -> Dict[str, Dict]:
    """Median wall, CPU and command CPU of each tool over ``reps`` rounds (a first,
    uncounted one fills the file caches), the order rotating each round; a tool that
    shows fewer than ``expected`` frames of ``function`` (``count(output)``) stops the
    bench, except the GDB-alone floor."""
    samples: Dict[str, Dict[str, List[float]]] = {
        name: {"wall": [], "cpu": [], "command": []} for name in argvs}
    names = list(argvs)
    for index in range(reps + 1):
        order = names[index % len(names):] + names[:index % len(names)]
        for name in order:
            wall, cpu, output = timed(argvs[name])
            frames = count(output)
            if frames < expected and not name.startswith("GDB alone"):
                raise RuntimeError(f"{name}: {frames} frames of {function}, expected >= "
                                   f"{expected}\n{output[-3000:]}")
            if index == 0:
                continue
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
            seconds = command_seconds(output)
            if seconds is not None:
                samples[name]["command"].append(seconds)
    return {name: {key: statistics.median(values) if values else None
                   for key, values in parts.items()} for name, parts in samples.items()}


def ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value * 1e3:.0f}"


def verdicts(results: Dict[str, Dict]) -> Dict[str, Tuple[str, str]]:
    """Per rival: are we faster (CPU) in the whole process, and with our command alone
    (GDB's reading of the core and its symbols left out; a rival GDB command is
    compared command to command, pystack as a whole)?"""
    mixed, only = results.get("py-mixed-bt"), results.get("py-mixed-bt --python-only")
    notes = {}
    rivals = [("py-bt (python-gdb.py)", mixed), ("pystack core --native", mixed),
              ("pystack core", only)]
    for rival, ours in rivals:
        if rival not in results or ours is None:
            continue
        theirs = results[rival]
        whole = ours["cpu"] < theirs["cpu"]
        theirs_alone = theirs["command"] if theirs["command"] is not None else theirs["cpu"]
        alone = ours["command"] is not None and ours["command"] < theirs_alone
        notes[rival] = ("yes" if whole else "no", "yes" if alone else "no")
    return notes


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gdb", action="append", metavar="PATH")
    parser.add_argument("--python", default=default_python(),
                        help="the CPython to record (default: pyenv's 3.12.1)")
    parser.add_argument("--depth", type=positive_int, default=1000)
    parser.add_argument("--reps", type=positive_int, default=5)
    args = parser.parse_args(argv)
    compile_plugin()
    if not args.python:
        sys.exit("no CPython: pass --python PATH")
    gdbs = args.gdb or default_gdbs()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="py-mixed-bt-bench-") as scratch:
        core = make_core(gdbs[0], args.python, args.depth, Path(scratch))
        for gdb in gdbs:
            version = gdb_version(gdb)
            print(f"measuring {version} ({gdb}) ...", file=sys.stderr, flush=True)
            results = measure(gdb, args.python, core, args.depth, args.reps)
            notes = verdicts(results)
            rows = [[version, name, ms(r["wall"]), ms(r["cpu"]), ms(r["command"]),
                     *notes.get(name, ("", ""))] for name, r in results.items()]
            print(f"\n{version}, core of {args.python} {args.depth} calls deep: medians of "
                  f"{args.reps} rounds\n")
            print(markdown_table(["gdb", "tool", "whole wall ms", "whole CPU ms",
                                  "command CPU ms", "we are faster: whole",
                                  "our command alone"], rows))
        if "pystack core" not in results:
            print("\npystack is not installed (pip install pystack): its rows are missing")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{time.perf_counter() - started:.0f} s on {os.cpu_count()} CPUs, "
          f"load average now {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
