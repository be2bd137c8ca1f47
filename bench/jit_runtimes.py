#!/usr/bin/env python3
"""What jit-unwind costs GDB's ``bt`` on the JIT runtimes we did not write (issue 20).

usage: python bench/jit_runtimes.py [--gdb PATH]... [--rounds N] [--reps N] [--only NAME]...

Each runtime is stopped in native code called from its JIT code, as
tests/e2e/test_jit_runtimes.py and tests/e2e/test_node.py stop it (programs in
tests/fixtures/runtimes/; HotSpot's class in build/runtimes/, from ``make fixtures``):
gjs's Ion loop calling libm's ``sin``; HotSpot's C2 code calling ``Thread.sleep``, without
and with a perf map (``Compiler.perfmap``); Ruby 3.1 YJIT calling ``Process.kill``; a
LuaJIT trace calling ``raise`` through the FFI; node 20's optimized code calling
``process.kill``, with ``--perf-basic-prof`` and without a perf map (also with
``JIT_UNWIND_ELF_CACHE=0``: what a session pays where no earlier one kept node's code
without CFI on disk), and after a deoptimization.

For each GDB (default: /usr/bin/gdb, GDB 13) and runtime, ``--rounds`` pairs of sessions,
plain GDB and GDB with gdb_init.py alternating: run to the stop, time the first ``bt``
(GDB's symbol look-ups and the plugin's naming of JIT code included), then ``--reps``
repeated ``bt`` after ``maintenance flush register-cache`` (the unwinders run again).
The CPU of GDB's ``run`` to the stop is printed last: what the plugin does at the stop
adds to it (its region map, built when GDB first unwinds the stopped frame, and at the
first stop with JIT code the import of the walk's modules, gdb/state.py).
Times are CPU seconds of the GDB process (this file is GDB's ``-x`` script; GDB is
CPU-bound in ``bt``), medians over the rounds, taken once GDB's worker threads are idle
after the stop (their indexing of the libraries' debug info, plain GDB's too, would
otherwise be charged to the bt it overlaps).  Ratios: plugin / plain GDB.  Issue 20's
goal: ``bt`` within 10x of plain GDB and under 0.5 s.  The frames each ``bt`` listed and
its outermost frame are printed beside the times: a walk that stopped early is no speed.

Plain GDB gives up early on most of these stacks; the plugin's bt goes on to
``start_thread`` or ``_start``, and to print those frames GDB reads libc's debug info
(libc6-dbg: compressed DWARF, inflated at its first use, ~8-10 ms of CPU), which plain
GDB's bt never needs.  So each runtime is also measured with libc's debug info read
before the first bt, in both sessions alike (WARM_UP): what is left is the plugin's cost.
Both are printed.

``--instructions`` counts instead of timing: each GDB runs under valgrind's callgrind,
which counts only while the first ``bt`` runs (toggled from GDB's Python through a tiny
library of callgrind's client requests, built here with gcc); one session per mode, as
the counts repeat exactly.  It tells where a first ``bt``'s cost lies (GDB's own code,
Python's, libc...) whatever the machine's load; it is not the goal's measure: the
instructions of plain GDB's ``bt`` leave out its system calls (ptrace reads), the larger
part of its time, so the ratios come out higher than the CPU times'.
"""

import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bt_overhead import (GDB_FLAGS, PLUGIN, compile_plugin, gdb_environment,
                         gdb_version, markdown_table, positive_int)

REPO = Path(__file__).resolve().parent.parent
RUNTIMES = REPO / "tests" / "fixtures" / "runtimes"
CLASSES = REPO / "build" / "runtimes"
CONFIG_ENV = "JIT_UNWIND_RUNTIME_BENCH"
SESSION_TIMEOUT = 300
GOAL_RATIO, GOAL_SECONDS = 10.0, 0.5
FRAME_LINE = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)")

# As tests/e2e/test_jit_runtimes.py runs them: a small heap and -Xbatch keep the JVM's
# warm-up the same every run; the breakpoint's ignore count passes it.
JAVA = ["-Xbatch", "-Xmx64m", "-XX:+UseSerialGC", "-XX:ReservedCodeCacheSize=32m"]
JAVA_SETUP = ["set breakpoint pending on", "handle SIGSEGV nostop noprint pass",
              "break JVM_Sleep", f"ignore 1 {30000 // 1024}"]
GJS_SETUP = ["set breakpoint pending on", "break sin", "ignore 1 50"]
NODE_NO_LOG = "--logfile=/dev/null"  # V8 would leave an isolate-*.log for the perf map
# Makes GDB read libc's debug info (the CUs of the outermost frames of a thread).
WARM_UP = ["info line start_thread", "info line __libc_start_call_main"]


@dataclass(frozen=True)
class Runtime:
    label: str
    tool: str                 # the executable, found on PATH
    args: List[str]
    setup: List[str]          # GDB commands before ``run``
    perf_map: bool = False    # leaves /tmp/perf-PID.map behind
    env: Tuple[Tuple[str, str], ...] = ()  # for GDB's environment

    def argv(self) -> List[str]:
        path = shutil.which(self.tool)
        if path is None:
            raise RuntimeError(f"{self.tool} is missing: run `make apt-deps`")
        return [path, *self.args]


SCENARIOS = [
    Runtime("gjs hot_sin", "gjs", [str(RUNTIMES / "hot_sin.js")], GJS_SETUP),
    Runtime("HotSpot, no perf map", "java", [*JAVA, "-cp", str(CLASSES), "Hot"], JAVA_SETUP),
    Runtime("HotSpot, perf map", "java", [*JAVA, "-cp", str(CLASSES), "Hot", "perfmap"],
            JAVA_SETUP, perf_map=True),
    Runtime("Ruby YJIT", "ruby", ["--yjit", str(RUNTIMES / "hot_cfunc.rb")], []),
    Runtime("LuaJIT", "luajit", [str(RUNTIMES / "hot_ffi.lua")], []),
    Runtime("node --perf-basic-prof", "node",
            ["--perf-basic-prof", NODE_NO_LOG, str(RUNTIMES / "node_hot.js")], [],
            perf_map=True),
    Runtime("node, no perf map", "node", [str(RUNTIMES / "node_hot.js")], []),
    # What a session pays without what an earlier one kept on disk (elf_facts.py):
    # the first session on a machine, or after node was upgraded.
    Runtime("node, no perf map, ELF cache off", "node", [str(RUNTIMES / "node_hot.js")],
            [], env=(("JIT_UNWIND_ELF_CACHE", "0"),)),
    Runtime("node after a deopt, no perf map", "node", [str(RUNTIMES / "node_deopt.js")], []),
]


# --- inside GDB ---------------------------------------------------------------------------

def gdb_main() -> None:
    """The ``-x`` script: set up, run to the stop, time the first and repeated bt."""
    import gdb

    config = json.loads(os.environ[CONFIG_ENV])
    results: Dict = {}
    try:
        for command in ["set pagination off", "set width 0", "set confirm off",
                        *config["setup"]]:
            gdb.execute(command, to_string=True)
        start = time.process_time()
        gdb.execute("run", to_string=True)
        results["run"] = time.process_time() - start
        inferior = gdb.selected_inferior()
        if inferior.pid <= 0 or gdb.selected_thread() is None:
            raise RuntimeError("the program did not stop")
        results["pid"] = inferior.pid
        _settle()
        for command in config["warm_up"]:
            gdb.execute(command, to_string=True)
        if config.get("counter"):
            text = _counted(gdb, config["counter"])
            results.update(first=0.0, shape=frame_shape(text), repeated=[])
        else:
            first, text = _timed(gdb)
            results.update(first=first, shape=frame_shape(text),
                           repeated=[_timed(gdb)[0] for _ in range(config["reps"])])
    except Exception as error:  # reported by the caller, with GDB's stderr
        results["error"] = repr(error)
    with open(config["output"], "w") as handle:
        json.dump(results, handle)
    gdb.execute("kill")


def _settle(limit: float = 3.0, quiet: float = 0.1) -> None:
    """Wait until GDB's other threads are idle (at most ``limit`` s).  After the stop,
    GDB's worker threads go on indexing the debug info of the libraries loaded (libc's:
    ~30 ms of CPU, plain GDB alike); their CPU is the process's, so a bt timed while
    they work is charged with it, the more the longer the bt runs."""
    def others() -> int:
        total = 0
        for task in os.listdir("/proc/self/task"):
            if int(task) != threading.get_native_id():
                try:
                    with open(f"/proc/self/task/{task}/schedstat") as handle:
                        total += int(handle.read().split()[0])
                except (OSError, ValueError, IndexError):
                    pass
        return total
    deadline, last, still_since = time.monotonic() + limit, others(), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - still_since < quiet:
        time.sleep(0.01)
        now = others()
        if now != last:
            last, still_since = now, time.monotonic()


def _timed(gdb):
    gdb.execute("maintenance flush register-cache")  # or a repeated bt unwinds nothing
    start = time.process_time()
    text = gdb.execute("bt", to_string=True)
    return time.process_time() - start, text


def _counted(gdb, counter: str) -> str:
    """The first bt with callgrind counting (``counter``: the library of its client
    requests), its counts written to a dump of their own."""
    import ctypes
    requests = ctypes.CDLL(counter)
    gdb.execute("maintenance flush register-cache")
    requests.count_start()
    try:
        return gdb.execute("bt", to_string=True)
    finally:
        requests.count_stop()


def frame_shape(text: str) -> Dict:
    names = [m.group(2) for m in map(FRAME_LINE.match, text.splitlines()) if m]
    return {"frames": len(names), "outermost": names[-1] if names else ""}


# --- outside GDB --------------------------------------------------------------------------

@dataclass
class Session:
    first: float
    repeated: List[float]
    shape: Dict
    run: float  # CPU seconds of GDB's ``run`` to the stop (what the stop's work adds to)
    objects: Optional[Dict[str, int]] = None  # counted: instructions per object file


def run_session(gdb: str, runtime: Runtime, plugin: bool, reps: int,
                warm_up: bool = False, counter: Optional[str] = None) -> Session:
    """One GDB session; with ``counter`` (the client-request library), under callgrind:
    the session's ``first`` is then the first bt's instruction count, and its
    ``objects`` how many of them ran in each object file's own code."""
    with tempfile.TemporaryDirectory(prefix="runtime-bench-") as scratch:
        output = Path(scratch) / "results.json"
        env = gdb_environment()
        env.update(runtime.env)
        env[CONFIG_ENV] = json.dumps({"output": str(output), "setup": runtime.setup,
                                      "reps": reps, "warm_up": WARM_UP if warm_up else [],
                                      "counter": counter})
        argv = [gdb, *GDB_FLAGS, *(["-x", str(PLUGIN)] if plugin else []),
                "-x", str(Path(__file__).resolve()), "--args", *runtime.argv()]
        if counter:
            argv = [*callgrind_command(Path(scratch)), *argv]
        completed = None
        try:
            completed = subprocess.run(argv, env=env, capture_output=True, text=True,
                                       errors="replace", timeout=SESSION_TIMEOUT)
        finally:
            results = json.loads(output.read_text()) if output.exists() else {}
            if runtime.perf_map and results.get("pid"):
                Path(f"/tmp/perf-{results['pid']}.map").unlink(missing_ok=True)
        objects = None
        if counter and "first" in results:
            results["first"], objects = callgrind_counts(Path(scratch))
    if "error" in results or "first" not in results:
        stderr = completed.stderr[-2000:] if completed else ""
        raise RuntimeError(f"{runtime.label}: {results.get('error', 'no results')}\n{stderr}")
    return Session(results["first"], results["repeated"], results["shape"],
                   results.get("run", 0.0), objects)


# --- counting instructions (--instructions) -----------------------------------------------

# callgrind's client requests, called from GDB's Python (ctypes): count the bt alone.
COUNTER_SOURCE = """#include <valgrind/callgrind.h>
void count_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void count_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT("bt"); }
"""
DUMP_PREFIX = "callgrind.out"


def build_counter(directory: Path) -> str:
    """The client-request library, compiled into ``directory``."""
    if shutil.which("valgrind") is None or not Path("/usr/include/valgrind").is_dir():
        raise RuntimeError("--instructions needs valgrind and its headers: "
                           "apt-get install valgrind")
    source, library = directory / "counter.c", directory / "counter.so"
    source.write_text(COUNTER_SOURCE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)],
                   check=True)
    return str(library)


def callgrind_command(scratch: Path) -> List[str]:
    """valgrind before GDB's argv: counting off until the bt, names written out in the
    dumps; children followed (GDB 18's pip wrapper runs GDB) but not through the shell
    that starts the program, which runs at full speed."""
    return ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--vgdb=no",
            "--compress-strings=no", "--trace-children=yes",
            "--trace-children-skip=*/sh,*/dash,*/bash",
            f"--callgrind-out-file={scratch}/{DUMP_PREFIX}.%p"]


def callgrind_counts(scratch: Path) -> Tuple[int, Dict[str, int]]:
    """The bt's instructions (the dump its end wrote: ``*.1``) and how many ran in each
    object file's own code (calls' inclusive costs left out)."""
    dumps = sorted(scratch.glob(f"{DUMP_PREFIX}.*.1"))
    if len(dumps) != 1:
        raise RuntimeError(f"expected one callgrind dump of the bt, found {len(dumps)}")
    total, objects, current, after_call = 0, collections.Counter(), "", False
    with open(dumps[0]) as handle:
        for line in handle:
            if line.startswith("summary:"):
                total = int(line.split()[1])
            elif line.startswith("ob="):
                current = Path(line[3:].strip()).name
            elif line.startswith("calls="):
                after_call = True  # the next cost line is the call's, inclusive
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if after_call:
                    after_call = False
                elif len(parts) > 1:
                    objects[current] += int(parts[1])
    return total, dict(objects)


@dataclass
class Result:
    runtime: Runtime
    sessions: Dict[str, List[Session]]  # "plain", "plugin"; "-warm": WARM_UP first

    def first(self, mode: str) -> float:
        return statistics.median(s.first for s in self.sessions[mode])

    def first_warm(self, mode: str) -> float:
        return self.first(f"{mode}-warm")

    def run(self, mode: str) -> float:
        return statistics.median(s.run for s in self.sessions[mode])

    def repeated(self, mode: str) -> float:
        return statistics.median(t for s in self.sessions[mode] for t in s.repeated)

    def shape(self, mode: str) -> str:
        shapes = {(s.shape["frames"], s.shape["outermost"]) for s in self.sessions[mode]}
        return "; ".join(f"{frames} to {outermost}" for frames, outermost in sorted(shapes))


def measure(gdb: str, runtime: Runtime, rounds: int, reps: int,
            counter: Optional[str] = None) -> Result:
    """Plain and plugin sessions alternate, so drifting machine load hits both alike."""
    result = Result(runtime, {key: [] for key in ("plain", "plugin", "plain-warm",
                                                  "plugin-warm")})
    for index in range(rounds):
        order = (False, True) if index % 2 == 0 else (True, False)
        for warm_up in (False, True):
            for plugin in order:
                session = run_session(gdb, runtime, plugin, reps, warm_up, counter)
                key = ("plugin" if plugin else "plain") + ("-warm" if warm_up else "")
                result.sessions[key].append(session)
    return result


HEADERS = ["GDB", "runtime", "frames: plain / plugin", "first bt ms: plain / plugin",
           "ratio", "repeated bt ms: plain / plugin", "ratio", "goal (<= 10x, < 0.5 s) met",
           "first bt, libc's debug info read first: plain / plugin", "ratio", "goal met",
           "run to the stop ms: plain / plugin"]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def row(version: str, r: Result) -> List[str]:
    cells = [version, r.runtime.label, f"{r.shape('plain')} / {r.shape('plugin')}"]
    met = {}
    for part in (r.first, r.repeated, r.first_warm):
        plain, plugin = part("plain"), part("plugin")
        ratio = plugin / plain if plain > 0 else float("inf")
        met[part.__name__] = ratio <= GOAL_RATIO and plugin < GOAL_SECONDS
        cells += [f"{ms(plain)} / {ms(plugin)}", f"{ratio:.1f}"]
    cells.insert(7, "yes" if met["first"] and met["repeated"] else "no")
    return cells + ["yes" if met["first_warm"] and met["repeated"] else "no",
                    f"{ms(r.run('plain'))} / {ms(r.run('plugin'))}"]


COUNTED_HEADERS = ["GDB", "runtime", "frames: plain / plugin",
                   "first bt, M instructions: plain / plugin", "ratio",
                   "libc's debug info read first: plain / plugin", "ratio",
                   "the plugin's, libc first: in GDB / Python / other code"]


def counted_row(version: str, r: Result) -> List[str]:
    cells = [version, r.runtime.label, f"{r.shape('plain')} / {r.shape('plugin')}"]
    for part in (r.first, r.first_warm):
        plain, plugin = part("plain"), part("plugin")
        cells += [f"{plain / 1e6:.1f} / {plugin / 1e6:.1f}",
                  f"{plugin / plain:.1f}" if plain else "-"]
    return cells + [code_shares(r.sessions["plugin-warm"][0].objects or {})]


def code_shares(objects: Dict[str, int]) -> str:
    """Percentages of the instructions run in GDB's own code, in Python's (libpython
    and its extension modules) and elsewhere (libc, libstdc++...)."""
    total = sum(objects.values()) or 1
    gdb = sum(n for name, n in objects.items() if name == "gdb")
    python = sum(n for name, n in objects.items()
                 if name.startswith("libpython") or ".cpython-" in name)
    return " / ".join(f"{100 * n / total:.0f} %" for n in (gdb, python, total - gdb - python))


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gdb", action="append", metavar="PATH",
                        help="a GDB to measure (repeatable; default /usr/bin/gdb)")
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="plain/plugin session pairs per runtime (default 3)")
    parser.add_argument("--reps", type=positive_int, default=3,
                        help="repeated bt per session (default 3)")
    parser.add_argument("--only", action="append", metavar="TEXT",
                        help="only the runtimes whose label contains TEXT (repeatable)")
    parser.add_argument("--instructions", action="store_true",
                        help="count the first bt's instructions under valgrind's callgrind "
                             "instead of timing it (one session per mode)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    compile_plugin()
    gdbs = args.gdb or ["/usr/bin/gdb"]
    chosen = [r for r in SCENARIOS
              if not args.only or any(text in r.label for text in args.only)]
    if args.instructions:
        return count_instructions(gdbs, chosen)
    started = time.perf_counter()
    loads = [os.getloadavg()[0]]
    rows = []
    for gdb in gdbs:
        version = gdb_version(gdb)
        for runtime in chosen:
            print(f"measuring {version}: {runtime.label} ...", file=sys.stderr, flush=True)
            rows.append(row(version, measure(gdb, runtime, args.rounds, args.reps)))
            loads.append(os.getloadavg()[0])
    print("bt stopped in native code under JIT code: median CPU ms of the first bt after\n"
          f"the stop and of repeated bt ({args.rounds} sessions each, plain GDB and GDB "
          "with jit-unwind\nalternating); ratio plugin / plain GDB\n")
    print(markdown_table(HEADERS, rows))
    print(f"\n{time.perf_counter() - started:.0f} s on {os.cpu_count()} CPUs, 1-minute load "
          f"average {min(loads):.1f}-{max(loads):.1f} during the run")
    return 0


def count_instructions(gdbs: List[str], chosen: List[Runtime]) -> int:
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory(prefix="runtime-bench-counter-") as directory:
        counter = build_counter(Path(directory))
        for gdb in gdbs:
            version = gdb_version(gdb)
            for runtime in chosen:
                print(f"counting {version}: {runtime.label} ...", file=sys.stderr, flush=True)
                rows.append(counted_row(version, measure(gdb, runtime, 1, 0, counter)))
    print("bt stopped in native code under JIT code: millions of instructions of the first "
          "bt after\nthe stop (valgrind's callgrind, one session each); ratio plugin / "
          "plain GDB\n")
    print(markdown_table(COUNTED_HEADERS, rows))
    print(f"\n{time.perf_counter() - started:.0f} s")
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
