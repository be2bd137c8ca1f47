#!/usr/bin/env python3
"""The first `bt` of a deep JIT stack with the plugin, against plain GDB's first `bt` of
the same program run with the JIT off (issue 34, item 3).

usage: python bench/nested_jit_bt.py [--gdb PATH]... [--rounds N] [--depth N]
                                     [--python PATH] [--keep DIR]

The program (PROGRAM below, CPython 3.14 with the JIT built in) nests DEPTH levels (100)
of one hot loop through C calls: in each loop ``sorted(..., key=KEY[cond])`` where the key
enters the next level, and the innermost level sends itself SIGTRAP with os.kill, the
condition chosen by indexing (no branch), so every level's call sits in JIT code.  Run
once with PYTHON_JIT=1 and once with PYTHON_JIT=0 under /usr/bin/gdb, each gcore'd at the
SIGTRAP: ~1,420 frames with ~100 traces and ~200 Python frames, ~1,220 frames without.

Sessions, per GDB, in rounds whose order rotates:
  plain   ``gdb -batch -ex bt PYTHON CORE_JIT_OFF``
  plugin  ``gdb -batch -x gdb_init.py -ex bt PYTHON CORE_JIT_ON``
and each again without the ``bt`` (GDB's load of the core, and the plugin's): the whole
run's CPU and wall (the kernel's accounting of the reaped GDB), and GDB's own
``time.process_time()`` read right before and after the ``bt``.  The bt's own cost is
given both ways: inside (after - before) and outside (median with bt - median without).

Prints per GDB the medians, min-max and the paired ratios plugin / plain (goal: the first
bt's ratio <= 1.20), the frames each bt printed, and the frame ratio: the frames alone
make the plugin's bt that much longer.  The machine is shared: read the CPU figures.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_overhead import (GDB_FLAGS, PLUGIN, REPO, SESSION_TIMEOUT, compile_plugin,
                         gdb_environment, gdb_version, markdown_table)

GOAL = 1.20
MARK = "@@cpu"
PYTHON = (Path.home() / ".cache" / "jit-unwind" / "cpython-3.14.6-jit-x86_64-linux"
          / "bin" / "python3.14")
PROGRAM = '''\
import os, signal, sys
PID = os.getpid()
SIGNAL = (0, signal.SIGTRAP)  # SIGNAL[False] checks the pid, SIGNAL[True] stops
WARM = 5_000                  # 3.14 compiles a loop after ~4,096 back edges
ITERS = 20


def enter(arg):
    return level(arg[0], arg[1], ITERS)


KEY = (len, enter)


def level(n, depth, iters):
    total = 0
    last = iters - 1
    for i in range(iters):
        # conditions combine with &: a branch taken the first time would leave the trace
        total += len(sorted(((n + 1, depth),), key=KEY[(n < depth) & (i == last)]))
        os.kill(PID, SIGNAL[(n == depth) & (i == last) & (depth > 0)])
    return total


sys.setrecursionlimit(10_000)
level(0, 0, WARM)
level(0, int(sys.argv[1]), ITERS)
'''
FRAME = re.compile(r"^#(\d+)\s")
OUTERMOST = "_start"


def make_cores(python: Path, depth: int, scratch: Path) -> Dict[str, Path]:
    """The program's cores at its SIGTRAP, JIT on and off, by GDB 13's gcore."""
    program = scratch / "nested_jit.py"
    program.write_text(PROGRAM)
    cores = {}
    for mode, jit in (("jit", "1"), ("nojit", "0")):
        core = scratch / f"core.{mode}"
        subprocess.run(["/usr/bin/gdb", *GDB_FLAGS, "-ex", "run", "-ex", f"gcore {core}",
                        "-ex", "kill", "--args", str(python), str(program), str(depth)],
                       env={**gdb_environment(), "PYTHON_JIT": jit}, capture_output=True,
                       timeout=SESSION_TIMEOUT, check=True)
        if not core.exists():
            raise RuntimeError(f"gcore wrote no {core}")
        cores[mode] = core
    return cores


def session(gdb: str, python: Path, core: Path, plugin: bool, bt: bool) -> Dict[str, float]:
    """One whole GDB: CPU and wall of the process, GDB's CPU inside the bt, frames."""
    mark = "python print('{} {{}}', __import__('time').process_time())".format(MARK)
    argv = [gdb, *GDB_FLAGS, *(["-x", str(PLUGIN)] if plugin else []),
            "-ex", "set pagination off", "-ex", mark.format("before"),
            *(["-ex", "bt"] if bt else []), "-ex", mark.format("after"), str(python),
            str(core)]
    before, start = os.times(), time.perf_counter()
    done = subprocess.run(argv, env=gdb_environment(), capture_output=True, text=True,
                          errors="replace", timeout=SESSION_TIMEOUT)
    wall, after = time.perf_counter() - start, os.times()
    lines = done.stdout.splitlines()
    marked = [index for index, line in enumerate(lines) if line.startswith(MARK)]
    marks = dict(lines[index].split()[1:] for index in marked)
    lines = lines[marked[0]:marked[-1]]  # the bt's output: not the core's load's frame 0
    frames = [line for line in lines if FRAME.match(line)]
    result = {"cpu": (after.children_user + after.children_system
                      - before.children_user - before.children_system),
              "wall": wall, "inside": float(marks["after"]) - float(marks["before"]),
              "frames": len(frames),
              "python": sum(1 for line in lines if line.lstrip().startswith("[py]")),
              "traces": sum(1 for line in frames if " [jit] " in line)}
    if bt and (not frames or OUTERMOST not in frames[-1]):
        raise RuntimeError(f"{gdb} {core.name}: bt of {len(frames)} frames does not reach "
                           f"{OUTERMOST}\n{done.stdout[-1500:]}{done.stderr[-1500:]}")
    return result


KINDS = [("plain", False, True), ("plugin", True, True), ("plain load", False, False),
         ("plugin load", True, False)]


def measure(gdb: str, python: Path, cores: Dict[str, Path],
            rounds: int) -> Dict[str, List[Dict[str, float]]]:
    runs: Dict[str, List[Dict[str, float]]] = {name: [] for name, _, _ in KINDS}

    def one(kind):
        name, plugin, bt = kind
        return session(gdb, python, cores["jit" if plugin else "nojit"], plugin, bt)

    for kind in KINDS:  # warm the page cache and the plugin's bytecode
        one(kind)
    for index in range(rounds):
        shift = index % len(KINDS)
        order = KINDS[shift:] + KINDS[:shift]
        if index % 2:
            order = order[::-1]
        for kind in order:
            runs[kind[0]].append(one(kind))
    return runs


def _figures(values: List[float]) -> str:
    return (f"{statistics.median(values) * 1e3:.0f} "
            f"({min(values) * 1e3:.0f}-{max(values) * 1e3:.0f})")


def _pairs(runs, key: str, a: str, b: str) -> List[float]:
    return [x[key] / y[key] for x, y in zip(runs[a], runs[b])]


def report(gdb: str, runs) -> List[List[str]]:
    med = {name: {k: statistics.median(r[k] for r in runs[name]) for k in runs[name][0]}
           for name in runs}
    version = gdb_version(gdb)
    rows = []
    for key in ("cpu", "wall"):
        whole = statistics.median(_pairs(runs, key, "plugin", "plain"))
        load = statistics.median(_pairs(runs, key, "plugin load", "plain load"))
        bt_plain = med["plain"][key] - med["plain load"][key]
        bt_plugin = med["plugin"][key] - med["plugin load"][key]
        rows.append([version, f"whole run {key}", _figures([r[key] for r in runs["plain"]]),
                     _figures([r[key] for r in runs["plugin"]]), f"{whole:.3f}"])
        rows.append([version, f"load only {key}",
                     _figures([r[key] for r in runs["plain load"]]),
                     _figures([r[key] for r in runs["plugin load"]]), f"{load:.3f}"])
        rows.append([version, f"bt = run - load, {key}", f"{bt_plain * 1e3:.0f}",
                     f"{bt_plugin * 1e3:.0f}", f"{bt_plugin / bt_plain:.3f}"])
    inside = statistics.median(_pairs(runs, "inside", "plugin", "plain"))
    rows.append([version, "bt inside GDB, cpu",
                 _figures([r["inside"] for r in runs["plain"]]),
                 _figures([r["inside"] for r in runs["plugin"]]), f"{inside:.3f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gdb", action="append", help="a GDB (repeatable)")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of the 4 sessions")
    parser.add_argument("--depth", type=int, default=100, help="levels of JIT code")
    parser.add_argument("--python", type=Path, default=PYTHON)
    parser.add_argument("--keep", type=Path, help="make the cores here and keep them")
    args = parser.parse_args()
    gdbs = args.gdb or [g for g in ("/usr/bin/gdb", str(REPO / ".venv" / "bin" / "gdb"))
                        if Path(g).exists()]
    compile_plugin()
    with tempfile.TemporaryDirectory(prefix="nested-jit-") as temporary:
        scratch = args.keep or Path(temporary)
        scratch.mkdir(parents=True, exist_ok=True)
        cores = make_cores(args.python, args.depth, scratch)
        rows, shapes = [], []
        for gdb in gdbs:
            runs = measure(gdb, args.python, cores, args.rounds)
            rows += report(gdb, runs)
            plain, plugin = runs["plain"][0], runs["plugin"][0]
            shapes.append([gdb_version(gdb), str(plain["frames"]), str(plugin["frames"]),
                           str(plugin["traces"]), str(plugin["python"]),
                           f"{plugin['frames'] / plain['frames']:.3f}"])
    print(f"nested JIT, depth {args.depth}: plain GDB on the JIT-off core against the "
          f"plugin on the JIT core, {args.rounds} rounds; ms median (min-max), "
          f"median of the pairs' ratios (the bt row: ratio of the medians)")
    print(markdown_table(["GDB", "measure", "plain", "plugin", "plugin / plain"], rows))
    print(f"\nframes printed (goal for the bt: <= {GOAL}; the frames alone weigh the "
          "frame ratio):")
    print(markdown_table(["GDB", "plain frames", "plugin frames", "traces", "Python frames",
                          "frame ratio"], shapes))


if __name__ == "__main__":
    main()
