#!/usr/bin/env python3
"""What jit-unwind costs GDB outside ``bt``: loading the plugin, and ``stepi``.

usage: python bench/load_and_step.py [--gdb PATH]... [--loads N] [--rounds N] [--steps N]

For each GDB (default: /usr/bin/gdb and <repo>/.venv/bin/gdb when present):

* load: ``source gdb_init.py`` timed inside a fresh GDB (wall and CPU of the GDB process,
  ``time.perf_counter`` / ``time.process_time`` around it), median of ``--loads`` GDBs.
  Goal: <= 30 ms of CPU.  The first stop's region discovery is not part of it.
* stepi: 1,000 single ``stepi`` commands (one ``gdb.execute`` each, as a user or a
  front end steps) in ``recurse`` of tests/fixtures/deepstack.c, without and with a page
  of JIT code in the process.  In one GDB session with the plugin, blocks of 50 steps
  alternate between the plugin enabled and disabled by GDB's ``disable unwinder`` /
  ``disable frame-filter``, and ``set jit-unwind symbol-file off`` for the symbol file's
  stop hook (so load drifting over seconds hits both alike); the ratio is the median of
  the blocks' pairs.  Goal: <= 1.05.  A disabled Python unwinder costs GDB one attribute
  check per frame (see docs/performance.md), so the disabled blocks stand for plain GDB;
  a separate plain GDB session is timed too, for reference.

Timing happens inside GDB: this same file is GDB's ``-x`` script.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_overhead import (GDB_FLAGS, PLUGIN, build_fixture, compile_plugin,
                         default_gdbs, gdb_environment, gdb_version, markdown_table,
                         positive_int)

CONFIG_ENV = "JIT_UNWIND_BENCH_CONFIG"
LOAD_GOAL_MS = 30.0
STEP_GOAL = 1.05
STEP_BLOCK = 50
PLUGIN_NAME = "jit-unwind"


# --- inside GDB ---------------------------------------------------------------------------

def gdb_main() -> None:
    import gdb

    config = json.loads(os.environ[CONFIG_ENV])
    results: Dict = {}
    try:
        results = _steps(gdb, config)
    except Exception as error:
        results["error"] = repr(error)
    with open(config["output"], "w") as handle:
        json.dump(results, handle)
    gdb.execute("kill")


def _steps(gdb, config) -> Dict:
    for setting in ("pagination off", "width 0", "confirm off"):
        gdb.execute(f"set {setting}")
    gdb.execute("break recurse", to_string=True)
    gdb.execute("run", to_string=True)
    gdb.execute("delete", to_string=True)
    pair = config["pair"]
    timed: Dict[str, List[float]] = {"on": [], "off": []}
    for block in range(config["steps"] // STEP_BLOCK):
        order = ("on", "off") if block % 2 == 0 else ("off", "on")
        for state in order if pair else ("on",):
            if pair:
                verb = "enable" if state == "on" else "disable"
                gdb.execute(f"{verb} unwinder global {PLUGIN_NAME}", to_string=True)
                gdb.execute(f"{verb} frame-filter global {PLUGIN_NAME}", to_string=True)
                # The symbol file's stop hook runs whatever GDB's switches say.
                gdb.execute(f"set jit-unwind symbol-file {state}", to_string=True)
            start = time.process_time()
            for _ in range(STEP_BLOCK):
                gdb.execute("stepi", to_string=True)
            timed[state].append(time.process_time() - start)
    frame = gdb.selected_frame()
    return {"timed": timed, "function": frame.name() if frame else None}


# --- outside GDB --------------------------------------------------------------------------

def run_gdb(gdb: str, config: Dict, plugin: bool, program: List[str]) -> Dict:
    with tempfile.TemporaryDirectory(prefix="load-step-bench-") as scratch:
        output = Path(scratch) / "results.json"
        env = gdb_environment()
        env[CONFIG_ENV] = json.dumps({**config, "output": str(output)})
        argv = [gdb, *GDB_FLAGS, *(["-x", str(PLUGIN)] if plugin else []),
                "-x", str(Path(__file__).resolve()), "--args", *program]
        completed = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace",
                                   timeout=600)
        results = json.loads(output.read_text()) if output.exists() else {}
    if "error" in results or not results:
        raise RuntimeError(f"{gdb}: {results.get('error', 'no results')}\n"
                           f"{completed.stderr[-2000:]}")
    return results


# GDB's own "source" from the command line: sourced from inside a Python script, GDB 13
# leaves that script's __file__ in place and gdb_init.py would look for itself there.
LOAD_PROBE = ["-ex", "python import time; _t = (time.perf_counter(), time.process_time())",
              "-ex", f"source {PLUGIN}",
              "-ex", "python print('LOADED', time.perf_counter() - _t[0], "
                     "time.process_time() - _t[1])"]


def load_once(gdb: str) -> Dict[str, float]:
    completed = subprocess.run([gdb, *GDB_FLAGS, *LOAD_PROBE], env=gdb_environment(),
                               capture_output=True, text=True, errors="replace", timeout=120)
    lines = [line.split() for line in completed.stdout.splitlines()
             if line.startswith("LOADED ")]
    if not lines or completed.stderr.strip():
        raise RuntimeError(f"{gdb}: loading the plugin failed\n{completed.stderr[-2000:]}")
    return {"wall": float(lines[0][1]), "cpu": float(lines[0][2])}


def measure_load(gdb: str, loads: int) -> Dict[str, float]:
    # The first load fills file caches (and bytecode).
    samples = [load_once(gdb) for _ in range(loads + 1)][1:]
    return {key: statistics.median(s[key] for s in samples) for key in ("wall", "cpu")}


def measure_steps(gdb: str, steps: int, jit_page: bool, rounds: int) -> Dict:
    program = [str(build_fixture("deepstack")), "2000", *(["--jit-page"] if jit_page else [])]
    ratios, on, off, plain = [], [], [], []
    for _ in range(rounds):
        paired = run_gdb(gdb, {"mode": "steps", "steps": steps, "pair": True}, True, program)
        alone = run_gdb(gdb, {"mode": "steps", "steps": steps, "pair": False}, False, program)
        for result in (paired, alone):
            if result["function"] != "recurse":
                raise RuntimeError(f"stepi left recurse: in {result['function']!r}")
        ratios += [a / b for a, b in zip(paired["timed"]["on"], paired["timed"]["off"])]
        on.append(sum(paired["timed"]["on"]))
        off.append(sum(paired["timed"]["off"]))
        plain.append(sum(alone["timed"]["on"]))
    # Per 1,000 steps: each paired session timed `steps` steps in each state.
    scale = 1000 / steps
    return {"ratio": statistics.median(ratios),
            "on": statistics.median(on) * scale, "off": statistics.median(off) * scale,
            "plain": statistics.median(plain) * scale}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gdb", action="append", metavar="PATH")
    parser.add_argument("--loads", type=positive_int, default=10,
                        help="fresh GDBs timing the plugin's load (default 10)")
    parser.add_argument("--steps", type=positive_int, default=1000,
                        help="stepi per state and session (default 1000)")
    parser.add_argument("--rounds", type=positive_int, default=2,
                        help="stepi sessions per program (default 2)")
    parser.add_argument("--no-step", action="store_true", help="measure the load only")
    args = parser.parse_args(argv)
    compile_plugin()
    gdbs = args.gdb or default_gdbs()
    started = time.perf_counter()
    load_rows, step_rows = [], []
    for gdb in gdbs:
        version = gdb_version(gdb)
        print(f"measuring {version} ({gdb}) ...", file=sys.stderr, flush=True)
        load = measure_load(gdb, args.loads)
        load_rows.append([version, f"{load['wall'] * 1e3:.1f}", f"{load['cpu'] * 1e3:.1f}",
                          f"<= {LOAD_GOAL_MS:.0f}",
                          # CPU judged: a fresh process's wall time on a loaded
                          # machine mostly waits for a CPU.
                          "yes" if load["cpu"] * 1e3 <= LOAD_GOAL_MS else "no"])
        for jit_page in [] if args.no_step else (False, True):
            r = measure_steps(gdb, args.steps, jit_page, args.rounds)
            step_rows.append([version, "JIT page" if jit_page else "no JIT code",
                              f"{r['plain'] * 1e3:.0f}", f"{r['off'] * 1e3:.0f}",
                              f"{r['on'] * 1e3:.0f}", f"{r['ratio']:.3f}",
                              f"<= {STEP_GOAL}", "yes" if r["ratio"] <= STEP_GOAL else "no"])
    print(f"Plugin load: source gdb_init.py in a fresh GDB, median of {args.loads}\n")
    print(markdown_table(["gdb", "wall ms", "CPU ms", "goal ms", "met"], load_rows))
    if not step_rows:
        return 0
    print("\n1,000 stepi in deepstack's recurse: CPU ms of GDB (plain session / plugin "
          "disabled / enabled),\nratio = median of paired blocks of "
          f"{STEP_BLOCK} steps, enabled / disabled\n")
    print(markdown_table(["gdb", "process", "plain ms", "disabled ms", "plugin ms",
                          "paired ratio", "goal", "met"], step_rows))
    load_avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{time.perf_counter() - started:.0f} s on {os.cpu_count()} CPUs, "
          f"load average now {load_avg}")
    return 0


def _inside_gdb() -> bool:
    try:
        import gdb  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    if _inside_gdb():
        gdb_main()
    else:
        sys.exit(main())
