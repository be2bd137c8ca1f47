#!/usr/bin/env python3
"""``jit-unwind attach --debugger none`` against ``py-spy dump --native`` on one live
process, and how long each read keeps the process stopped.

usage: python bench/attach_vs_pyspy.py [--python PATH] [--py-spy PATH] [--reps N]

The process: CPython (default: the test interpreter 3.14.6 with its JIT,
``PYTHON_JIT=1``) running 4 threads: the main thread in a hot loop that is JIT code, 3
threads in JIT loops around ``time.sleep``.  On it, each tool once per round (rounds
alternate the order), whole processes from start to end, as a user runs them:

* ``jit-unwind attach --debugger none -v PID`` (this checkout's plugin; ``-v`` says how
  long the process stayed stopped) and the same with ``--nonblocking``;
* ``py-spy dump --native --pid PID`` (``--py-spy``, default: installed by this script
  into a temporary virtual environment with pip).

Every output must show the main thread's Python function, or the script stops.
Figures: medians of wall and CPU (the tool and its children) over ``--reps`` rounds,
and of the time the process stayed stopped per read (ours; py-spy's pauses the process
for its whole read, which it does not report).  Goals: wall time no more than
py-spy's, the process stopped at most 20 ms per read.
"""

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
from bt_overhead import markdown_table, positive_int
from py_mixed_bt import clean_environment

GOAL_STOPPED_MS = 20.0
TARGET = '''
import threading, time
def spin():
    while True:
        time.sleep(0.0001)
def work():
    total = 0
    while True:
        for i in range(10**6):
            total += i % 7
for index in range(3):
    threading.Thread(target=spin, name=f"spinner-{index}", daemon=True).start()
work()
'''
_STOPPED = re.compile(r"stopped for ([\d.]+) ms")
_NONBLOCKING = re.compile(r"([\d.]+) ms at most")


def default_python() -> Optional[str]:
    try:
        from tests.jit_python import jit_python
        return str(jit_python("3.14"))
    except Exception:  # not built on this machine
        return None


def install_py_spy(scratch: Path) -> str:
    """py-spy in a new virtual environment under ``scratch`` (pip fetches it)."""
    venv = scratch / "py-spy-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "py-spy"], check=True)
    return str(venv / "bin" / "py-spy")


def tools(pid: int, py_spy: str) -> Dict[str, List[str]]:
    ours = [sys.executable, "-m", "jit_unwind", "attach", "--debugger", "none", "-v",
            str(pid)]
    return {"jit-unwind attach --debugger none": ours,
            "jit-unwind attach --debugger none --nonblocking": [*ours, "--nonblocking"],
            "py-spy dump --native": [py_spy, "dump", "--native", "--pid", str(pid)]}


def timed(argv: List[str]):
    """Wall and CPU seconds (the process and its children) and its output."""
    environment = dict(clean_environment(), PYTHONPATH=str(REPO / "plugin"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(argv, env=environment, capture_output=True, text=True,
                               errors="replace", timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall, cpu, completed.stdout + completed.stderr


def measure(argvs: Dict[str, List[str]], reps: int) -> Dict[str, Dict[str, float]]:
    samples: Dict[str, Dict[str, List[float]]] = {
        name: {"wall": [], "cpu": [], "stopped": []} for name in argvs}
    names = list(argvs)
    for round_ in range(reps):
        for name in (names if round_ % 2 == 0 else list(reversed(names))):
            wall, cpu, output = timed(argvs[name])
            if "work" not in output:
                raise SystemExit(f"{name}: no frame of work():\n{output[-3000:]}")
            samples[name]["wall"].append(wall)
            samples[name]["cpu"].append(cpu)
            stopped = _STOPPED.search(output) or _NONBLOCKING.search(output)
            if stopped:
                samples[name]["stopped"].append(float(stopped.group(1)))
    return {name: {key: statistics.median(values) if values else float("nan")
                   for key, values in figures.items()}
            for name, figures in samples.items()}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=default_python())
    parser.add_argument("--py-spy", dest="py_spy", default=shutil.which("py-spy"))
    parser.add_argument("--reps", type=positive_int, default=9)
    options = parser.parse_args(argv)
    if not options.python:
        raise SystemExit("need a CPython with its JIT (--python)")
    # Bytecode as `pip install` leaves it (PYTHONDONTWRITEBYTECODE would make every
    # run compile the plugin again).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "plugin")],
                   check=True)
    with tempfile.TemporaryDirectory(prefix="attach-vs-py-spy-") as scratch:
        py_spy = options.py_spy or install_py_spy(Path(scratch))
        script = Path(scratch) / "four_threads.py"
        script.write_text(TARGET)
        target = subprocess.Popen([options.python, str(script)],
                                  env=dict(clean_environment(), PYTHON_JIT="1"))
        try:
            time.sleep(2)  # the loops compiled by the JIT
            results = measure(tools(target.pid, py_spy), options.reps)
        finally:
            target.kill()
            target.wait()
    rival = results["py-spy dump --native"]
    rows = [[name, f"{figures['wall'] * 1000:.0f}", f"{figures['cpu'] * 1000:.0f}",
             f"{figures['wall'] / rival['wall']:.2f}",
             "-" if figures["stopped"] != figures["stopped"] else f"{figures['stopped']:.1f}"]
            for name, figures in results.items()]
    print(markdown_table(["tool", "wall ms", "CPU ms", "wall / py-spy's",
                          "process stopped, ms"], rows))
    ours = results["jit-unwind attach --debugger none"]
    print(f"\ngoals: wall <= py-spy's: {'met' if ours['wall'] <= rival['wall'] else 'NOT met'}"
          f"; stopped <= {GOAL_STOPPED_MS:.0f} ms: "
          f"{'met' if ours['stopped'] <= GOAL_STOPPED_MS else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
