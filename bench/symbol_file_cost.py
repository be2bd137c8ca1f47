#!/usr/bin/env python3
"""What loading the JIT symbol file costs, against the first ``bt`` of the same stop.

usage: python bench/symbol_file_cost.py [--gdb PATH]... [--functions N] [--sessions N]

For each GDB (default: /usr/bin/gdb and <repo>/.venv/bin/gdb when present), run
``build/manyjit N --perf-map`` (N JIT functions, default 10,000, one perf-map line each;
built from tests/fixtures/manyjit.c when missing or older) to its SIGTRAP with
``set jit-unwind symbol-file off``, then, inside GDB:

* first bt: the first ``bt`` after the stop (what a user waits for);
* load: ``set jit-unwind symbol-file on``: choose the regions, write the ELF (names and
  addresses; GDB's file has no unwind rules), ``add-symbol-file`` it (what every stop
  whose JIT code changed costs);
* bt after: the next ``bt`` (GDB's frame cache was flushed by the new object file);
* GDB alone: GDB's own ``add-symbol-file`` of a copy of that file, the plugin's file
  unloaded first: what loading those symbols costs whoever writes them, and its ratio
  to the first bt (the floor of the load's).

Twice: live (the stop already read the perf map, so the first bt is warm in that
respect) and on a core file of the same process (gcore), loaded with ``core-file``
after the plugin, where the first bt also finds the regions and reads the perf map.

Prints the median of each over the sessions and the ratio load / first bt (goal: < 0.20).
Times are CPU time of the GDB process (user + system, all its threads: GDB 18 spreads
its minimal-symbol work over worker threads).  The "(wall)" column is the same ratio in
elapsed time, what the user waits; the goal is judged on CPU time.  Each session
checks that the bt lists the JIT frame by its perf-map name and that the load put N
symbols in GDB.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_overhead import compile_plugin

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
PLUGIN = REPO / "gdb_init.py"
IN_GDB = Path(__file__).resolve().parent / "symbol_file_in_gdb.py"
CONFIG_ENV = "JIT_UNWIND_SYMFILE_BENCH"  # read by IN_GDB
GOAL = 0.20


def _build(functions: int) -> Path:
    binary = BUILD / "manyjit"
    source = REPO / "tests" / "fixtures" / "manyjit.c"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        BUILD.mkdir(exist_ok=True)
        subprocess.run(["gcc", "-O0", "-g", "-fno-omit-frame-pointer", "-o", str(binary),
                        str(source)], check=True)
    return binary


def _session(gdb: str, binary: Path, functions: int, core: str = "",
             save_core: str = "") -> dict:
    config = {"functions": functions, "core": core, "save_core": save_core}
    env = dict(os.environ, **{CONFIG_ENV: json.dumps(config)})
    argv = [gdb, "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
            "-x", str(PLUGIN), "-x", str(IN_GDB)]
    argv += [str(binary)] if core else ["--args", str(binary), str(functions), "--perf-map"]
    result = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                            timeout=600, stdin=subprocess.DEVNULL)
    output = result.stdout + result.stderr
    for line in output.splitlines():
        if line.startswith("RESULT "):
            found = json.loads(line[len("RESULT "):])
            pid = re.search(r"^PID (\d+)$", output, re.M)
            found["pid"] = int(pid.group(1)) if pid else None
            return found
    raise SystemExit(f"{gdb}: no result:\n{output}")


def _report(label: str, runs) -> None:
    """One row: medians of first bt, load (and bt after, when measured), the ratio."""
    first = statistics.median(r["first_bt"] for r in runs)
    load = statistics.median(r["load"] for r in runs)
    after = ""
    if "bt_after" in runs[0]:
        after = f" {statistics.median(r['bt_after'] for r in runs) * 1e3:>8.1f}ms"
    ratio = statistics.median(r["load"] / r["first_bt"] for r in runs)
    wall = statistics.median(r["load_wall"] / r["first_bt_wall"] for r in runs)
    own = ""
    if "own" in runs[0]:  # the debugger's own load of the same file: the floor
        own = (f" {statistics.median(r['own'] for r in runs) * 1e3:>8.1f}ms "
               f"{statistics.median(r['own'] / r['first_bt'] for r in runs):>6.3f}")
    verdict = "ok" if ratio < GOAL else f"above the goal {GOAL:.2f}"
    print(f"{label:<26} {first * 1e3:>8.1f}ms {load * 1e3:>8.1f}ms{after} "
          f"{ratio:>14.3f} {wall:>7.3f}{own}  {verdict}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gdb", action="append")
    parser.add_argument("--functions", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=5)
    options = parser.parse_args()
    compile_plugin()
    gdbs = options.gdb or [g for g in ("/usr/bin/gdb", str(REPO / ".venv" / "bin" / "gdb"))
                           if os.path.exists(g)]
    binary = _build(options.functions)
    print(f"manyjit {options.functions} --perf-map, {options.sessions} sessions per GDB, "
          f"CPU time of GDB, medians")
    print(f"{'GDB, stack':<26} {'first bt':>10} {'load':>10} {'bt after':>10} "
          f"{'load/first bt':>14} {'(wall)':>7} {'GDB alone':>10} {'/first':>6}")
    for gdb in gdbs:
        with tempfile.TemporaryDirectory() as directory:
            core = os.path.join(directory, "manyjit.core")
            live = [_session(gdb, binary, options.functions, save_core=core if not i else "")
                    for i in range(options.sessions)]
            try:
                cores = [_session(gdb, binary, options.functions, core=core)
                         for _ in range(options.sessions)]
            finally:
                for run in live:
                    if run["pid"]:
                        Path(f"/tmp/perf-{run['pid']}.map").unlink(missing_ok=True)
        name = os.path.relpath(gdb, REPO) if gdb.startswith(str(REPO)) else gdb
        _report(f"{name}, live", live)
        _report(f"{name}, core", cores)

if __name__ == "__main__":
    main()
