#!/usr/bin/env python3
"""What a whole GDB session pays for the plugin when no JIT frame is ever asked for
(issue 34: scripted crash triage runs exactly this).

usage: python bench/session_cost.py [--gdb PATH]... [--rounds N] [--depth N]

Each session is ``gdb -batch [-x gdb_init.py] -ex run -ex bt -ex kill`` of
``build/deepstack DEPTH --jit-page`` (DEPTH native frames, default 2,000, in a process
that also holds one anonymous executable page, never run: a JIT process whose stack is
all native).  Plain and plugin sessions alternate, each round in the other order; per
session the CPU (user + system of GDB and the program it ran, from the kernel's
accounting of the reaped processes) and the wall time.  Inside each session GDB's own
``time.process_time()`` is read between the commands, which splits its CPU into the
load (``-x gdb_init.py``; nothing in a plain session), ``run`` to the stop (the stop's
handlers included) and ``bt``.

Prints, per GDB, the medians and the median of the pairs' ratios (plugin / plain), CPU
and wall; goal: <= 1.05.  Each bt must reach main, so a broken unwind cannot pass as
fast.  The machine is shared: read the paired CPU ratio first.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_overhead import (GDB_FLAGS, PLUGIN, REPO, SESSION_TIMEOUT, build_fixture,
                         compile_plugin, frame_shape, gdb_environment, gdb_version,
                         markdown_table)

GOAL = 1.05
MARK = "@@cpu"  # a line "@@cpu PHASE SECONDS" printed by GDB's Python
PHASES = ("load", "run", "bt")


def _mark(phase: str) -> List[str]:
    return ["-ex", f"python print('{MARK} {phase}', __import__('time').process_time())"]


def session(gdb: str, depth: int, plugin: bool) -> Dict[str, float]:
    """One whole GDB process: its CPU and wall seconds, and GDB's CPU per phase."""
    program = build_fixture("deepstack")
    argv = [gdb, *GDB_FLAGS, "-iex", "python import time",
            "-iex", f"python print('{MARK} start', time.process_time())",
            *(["-x", str(PLUGIN)] if plugin else []), *_mark("load"),
            "-ex", "set pagination off", "-ex", "run", *_mark("run"),
            "-ex", "bt", *_mark("bt"), "-ex", "kill",
            "--args", str(program), str(depth), "--jit-page"]
    before, start = os.times(), time.perf_counter()
    done = subprocess.run(argv, env=gdb_environment(), capture_output=True, text=True,
                          errors="replace", timeout=SESSION_TIMEOUT)
    wall, after = time.perf_counter() - start, os.times()
    shape = frame_shape(done.stdout)
    if shape["frames"] < depth or shape["outermost"] != "main":
        raise RuntimeError(f"{gdb}: bt listed {shape['frames']} frames ending in "
                           f"{shape['outermost']!r}\n{done.stderr[-2000:]}")
    marks = {}
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            _, phase, seconds = line.split()
            marks[phase] = float(seconds)
    result = {"cpu": (after.children_user + after.children_system
                      - before.children_user - before.children_system), "wall": wall}
    previous = marks["start"]
    for phase in PHASES:
        result[phase] = marks[phase] - previous
        previous = marks[phase]
    return result


def measure(gdb: str, depth: int, rounds: int) -> Dict[str, Dict[str, List[float]]]:
    runs: Dict[str, Dict[str, List[float]]] = {"plain": {}, "plugin": {}, "ratio": {}}
    for plugin in (False, True):  # warm the file cache and the plugin's bytecode
        session(gdb, depth, plugin)
    for index in range(rounds):
        order = (False, True) if index % 2 == 0 else (True, False)
        pair = {plugin: session(gdb, depth, plugin) for plugin in order}
        for plugin, figures in pair.items():
            for name, value in figures.items():
                runs["plugin" if plugin else "plain"].setdefault(name, []).append(value)
        for name in ("cpu", "wall"):
            runs["ratio"].setdefault(name, []).append(pair[True][name] / pair[False][name])
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gdb", action="append", help="a GDB (repeatable)")
    parser.add_argument("--rounds", type=int, default=20, help="plain/plugin pairs per GDB")
    parser.add_argument("--depth", type=int, default=2000)
    args = parser.parse_args()
    gdbs = args.gdb or [g for g in ("/usr/bin/gdb", str(REPO / ".venv" / "bin" / "gdb"))
                        if Path(g).exists()]
    compile_plugin()
    rows, phase_rows = [], []
    for gdb in gdbs:
        runs = measure(gdb, args.depth, args.rounds)
        version = gdb_version(gdb)
        median = {mode: {k: statistics.median(v) for k, v in runs[mode].items()}
                  for mode in runs}
        cpu_ratio, wall_ratio = median["ratio"]["cpu"], median["ratio"]["wall"]
        rows.append([version, f"{median['plain']['cpu'] * 1e3:.0f}",
                     f"{median['plugin']['cpu'] * 1e3:.0f}", f"{cpu_ratio:.3f}",
                     f"{median['plain']['wall'] * 1e3:.0f}",
                     f"{median['plugin']['wall'] * 1e3:.0f}", f"{wall_ratio:.3f}",
                     "yes" if cpu_ratio <= GOAL else "no"])
        phase_rows.append([version, *(
            f"{median['plain'][p] * 1e3:.1f} / {median['plugin'][p] * 1e3:.1f}"
            for p in PHASES)])
    print(f"deepstack {args.depth} --jit-page, gdb -batch -ex run -ex bt, "
          f"{args.rounds} pairs per GDB, medians (ms)")
    print(markdown_table(["GDB", "plain CPU", "plugin CPU", "paired CPU ratio", "plain wall",
                          "plugin wall", "paired wall ratio", f"met (<= {GOAL})"], rows))
    print("\nGDB's own CPU per phase, plain / plugin (ms):")
    print(markdown_table(["GDB", *PHASES], phase_rows))


if __name__ == "__main__":
    main()
