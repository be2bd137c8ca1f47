#!/usr/bin/env python3
"""``jit-unwind core`` against ``pystack core`` on one core of a 1,000-deep recursion.

usage: python bench/cli_vs_pystack.py [--python PATH] [--gdb PATH] [--pystack PATH]
                                      [--depth N] [--reps N]

The core: CPython (default: the test interpreter 3.14.6 with DWARF, from
``tests/jit_python.py``) recursing ``--depth`` Python calls deep, then raising SIGTRAP;
GDB's ``gcore`` writes it.  On it, each tool once per round (rounds alternate the
order), whole processes from start to end, as a user runs them:

* ``jit-unwind core --debugger none`` and ``--python-only --debugger none`` (this
  checkout's plugin, no debugger), and the first once more with its on-disk caches off
  (what DWARF said at each pc, inflated sections: a first run on this machine);
* ``jit-unwind core`` and ``--python-only`` through GDB (``--gdb``, default gdb on
  PATH);
* ``pystack core CORE PYTHON --native`` and ``pystack core CORE PYTHON`` (``--pystack``,
  default: the one beside this Python, else /tmp/pystack-venv/bin/pystack: ``python3
  -m venv /tmp/pystack-venv && /tmp/pystack-venv/bin/pip install pystack``).

Every output must list at least ``--depth`` frames of the recursion, or the script
stops.  Figures: medians of wall and CPU (the tool and its children) over ``--reps``
rounds, and each jit-unwind row's CPU against its pystack rival (``--native`` against
``pystack --native``, ``--python-only`` against ``pystack``).  Goals: ``--debugger
none`` faster than pystack; through GDB within 1.5x of it.
"""

import argparse
import resource
import shutil
import statistics
import subprocess
import time
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
from py_mixed_bt import FUNCTION, clean_environment, make_core
from bt_overhead import markdown_table, positive_int

GOAL_GDB = 1.5
# --debugger none as on a machine's first run: no DWARF answers or inflated sections
# kept from an earlier one (coreread/frame_cache.py, coreread/section_cache.py).
COLD = ("JIT_UNWIND_FRAME_CACHE=0", "JIT_UNWIND_SECTION_CACHE=0")


def default_python() -> Optional[str]:
    try:
        from tests.jit_python import jit_python
        return str(jit_python("3.14"))
    except Exception:  # not built on this machine
        return None


def default_pystack() -> Optional[str]:
    return (shutil.which("pystack", path=str(Path(sys.executable).parent))
            or shutil.which("pystack")
            or (str(Path("/tmp/pystack-venv/bin/pystack"))
                if Path("/tmp/pystack-venv/bin/pystack").exists() else None))


def jit_unwind(*args: str) -> List[str]:
    """This checkout's command (its plugin first on the path: env below)."""
    return [sys.executable, "-m", "jit_unwind", "core", *args]


def tools(core: Path, python: str, gdb: str, pystack: Optional[str]) -> Dict[str, List[str]]:
    found = {
        "jit-unwind core --debugger none": jit_unwind("--debugger", "none", str(core), python),
        "jit-unwind core --debugger none, caches off":
            ["env", *COLD, *jit_unwind("--debugger", "none", str(core), python)],
        "jit-unwind core --python-only --debugger none":
            jit_unwind("--python-only", "--debugger", "none", str(core), python),
        "jit-unwind core (GDB)": jit_unwind("--debugger", gdb, str(core), python),
        "jit-unwind core --python-only (GDB)":
            jit_unwind("--python-only", "--debugger", gdb, str(core), python),
    }
    if pystack:
        found["pystack core --native"] = [pystack, "core", str(core), python, "--native"]
        found["pystack core"] = [pystack, "core", str(core), python]
    return found


RIVALS = {"jit-unwind core --debugger none": "pystack core --native",
          "jit-unwind core --debugger none, caches off": "pystack core --native",
          "jit-unwind core --python-only --debugger none": "pystack core",
          "jit-unwind core (GDB)": "pystack core --native",
          "jit-unwind core --python-only (GDB)": "pystack core"}


def timed(argv: List[str]):
    """Wall and CPU seconds (the process and its children) and its output, this
    checkout's plugin first on the path (pystack ignores it)."""
    environment = dict(clean_environment(), PYTHONPATH=str(REPO / "plugin"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # µs, where os.times has ticks
    start = time.perf_counter()
    completed = subprocess.run(argv, env=environment, capture_output=True, text=True,
                               errors="replace", timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall, cpu, completed.stdout + completed.stderr


def measure(argvs: Dict[str, List[str]], reps: int, depth: int) -> Dict[str, Dict]:
    samples: Dict[str, Dict[str, List[float]]] = {n: {"wall": [], "cpu": []} for n in argvs}
    names = list(argvs)
    for round_ in range(reps):
        for name in (names if round_ % 2 == 0 else list(reversed(names))):
            wall, cpu, output = timed(argvs[name])
            frames = output.count(FUNCTION)
            if frames < depth:
                raise SystemExit(f"{name}: {frames} frames of {FUNCTION}, expected "
                                 f"{depth}:\n{output[-3000:]}")
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
    return {name: {key: statistics.median(values) for key, values in figures.items()}
            for name, figures in samples.items()}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=default_python())
    parser.add_argument("--gdb", default=shutil.which("gdb"))
    parser.add_argument("--pystack", default=default_pystack())
    parser.add_argument("--depth", type=positive_int, default=1000)
    parser.add_argument("--reps", type=positive_int, default=5)
    options = parser.parse_args(argv)
    if not options.python or not options.gdb:
        raise SystemExit("need a CPython (--python) and a GDB (--gdb)")
    # Bytecode as `pip install` leaves it (PYTHONDONTWRITEBYTECODE would make every
    # run compile the plugin again).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "plugin")],
                   check=True)
    with tempfile.TemporaryDirectory(prefix="cli-vs-pystack-") as scratch:
        core = make_core(options.gdb, options.python, options.depth, Path(scratch))
        results = measure(tools(core, options.python, options.gdb, options.pystack),
                          options.reps, options.depth)
    rows = []
    for name, figures in results.items():
        rival = results.get(RIVALS.get(name, ""))
        ratio = figures["cpu"] / rival["cpu"] if rival else None
        goal = 1.0 if "none" in name else GOAL_GDB
        rows.append([name, f"{figures['wall'] * 1000:.0f}", f"{figures['cpu'] * 1000:.0f}",
                     RIVALS.get(name, "-") if rival else "-",
                     f"{ratio:.2f}" if ratio else "-",
                     ("yes" if ratio < goal else "no") if ratio else "-"])
    print(f"core: {options.depth}-deep recursion of {options.python}, "
          f"medians of {options.reps} rounds")
    print(markdown_table(["tool", "wall ms", "CPU ms", "rival", "CPU ratio", "goal met"],
                         rows))
    if options.pystack is None:
        print("\npystack is not installed (pip install pystack): its rows are missing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
