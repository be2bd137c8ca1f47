#!/usr/bin/env python3
"""What jit-unwind costs GDB's ``bt``: overhead on native stacks, µs per JIT frame.

usage: python bench/bt_overhead.py [--gdb PATH]... [--rounds N] [--reps N] [--jit-reps N]

For each GDB (default: /usr/bin/gdb and <repo>/.venv/bin/gdb when present):

* native: a 2,000-frame C stack (tests/fixtures/deepstack.c), once with no JIT code
  and once in a process that mapped a page of JIT code (``--jit-page``); ``bt`` in
  plain GDB and in GDB with the plugin, in alternating sessions.  Prints two ratios of
  warm bt times: plugin / plain GDB (medians), and the paired ratio: in the plugin's
  sessions each bt is paired with one while GDB's ``disable unwinder`` / ``disable
  frame-filter`` switch the plugin off (median of pair ratios).  The goals (<= 1.05
  without JIT code, <= 1.10 with) are judged on the paired ratio, which load on a
  shared machine disturbs least.
* whole process: ``gdb -batch -ex run -ex bt`` on the same two programs, from start to
  end, with and without ``-x gdb_init.py`` (alternating; wall and CPU time, the median
  of the pairs' ratios): plugin load, region discovery and bt together.
* JIT: the toy JIT (tests/fixtures/toyjit.c) with 2,000 JIT frames, frame-pointer and
  frameless code, with and without a perf map.  Prints µs per JIT frame:
  (bt time - native frames x per-frame bt time of the native stack with the plugin)
  / JIT frames.  Plain GDB cannot unwind these stacks, so it gives no baseline.

Timing happens inside GDB (this same file is GDB's ``-x`` script): run to the SIGTRAP,
then repeat ``maintenance flush register-cache`` + ``bt`` so the unwinders run every
time.  The first bt after the stop is "cold" (the plugin's region discovery, GDB's symbol
lookups); the median of the others is "warm".  Times are CPU time of the GDB process
(user + system; GDB is CPU-bound in bt): less disturbed than wall time by other work on a
shared machine, yet not immune, hence alternating sessions and pairs.
Each bt must list the expected frames, so a broken unwind cannot pass as fast.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
FIXTURES = REPO / "tests" / "fixtures"
PLUGIN = REPO / "gdb_init.py"
GDB_FLAGS = ["-nx", "-q", "-batch", "-iex", "set debuginfod enabled off"]
CFLAGS = ["-O0", "-g", "-fno-omit-frame-pointer"]
CONFIG_ENV = "JIT_UNWIND_BENCH_CONFIG"
PLUGIN_NAME = "jit-unwind"  # of its unwinder and frame filter, as `info unwinder` lists
GOAL_RATIO = 1.05
GOAL_RATIO_JIT_PROCESS = 1.10  # native frames of a process that has JIT code
NATIVE_DEPTH = 2000
SESSION_TIMEOUT = 300

# A bt line: "#12 0x... in NAME (...)" or "#0  NAME (...)"; NAME may hold spaces
# ("[jit 0x...+0x..]").
FRAME_LINE = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*?)(?: \(|$)")
# A JIT frame's name: from the plugin without / with a perf map, or "??" (no filter).
JIT_NAME = re.compile(r"^(\[jit 0x|toy::|\?\?$)")


@dataclass(frozen=True)
class Scenario:
    label: str
    program: str          # fixture name: build/NAME from tests/fixtures/NAME.c
    args: List[str]
    jit_frames: int       # JIT frames the bt must show (0: a native stack)
    min_frames: int
    goal: float = GOAL_RATIO  # plugin / plain GDB, for native stacks

    @property
    def perf_map(self) -> bool:
        return "--perf-map" in self.args


NATIVE = Scenario("no JIT code", "deepstack", [str(NATIVE_DEPTH)], 0, NATIVE_DEPTH)
# The same stack in a process that mapped one page of JIT code (never run): the
# plugin's per-frame fast path then has to look at every frame.
NATIVE_JIT_PAGE = Scenario("JIT page", "deepstack", [str(NATIVE_DEPTH), "--jit-page"], 0,
                           NATIVE_DEPTH, GOAL_RATIO_JIT_PROCESS)
NATIVE_SCENARIOS = [NATIVE, NATIVE_JIT_PAGE]
# toyjit's DEPTH counts from 0: fp code gives 1 JIT frame per level, frameless code 2
# (the function and its entry trampoline); 2,000 JIT frames either way.
JIT_SCENARIOS = [
    Scenario("fp", "toyjit", ["fp", "1999", "sigtrap"], 2000, 2000),
    Scenario("frameless", "toyjit", ["frameless", "999", "sigtrap"], 2000, 2000),
    Scenario("fp + perf map", "toyjit", ["fp", "1999", "sigtrap", "--perf-map"], 2000, 2000),
    Scenario("frameless + perf map", "toyjit",
             ["frameless", "999", "sigtrap", "--perf-map"], 2000, 2000),
]


# --- inside GDB ---------------------------------------------------------------------------

def gdb_main() -> None:
    """The ``-x`` script: run to the stop, time the commands, write JSON results."""
    import gdb

    config = json.loads(os.environ[CONFIG_ENV])
    results: Dict = {"pid": None}
    for setting in ("pagination off", "width 0", "confirm off"):
        gdb.execute(f"set {setting}")
    try:
        start = time.process_time()
        gdb.execute("run", to_string=True)
        results["run"] = time.process_time() - start
        inferior = gdb.selected_inferior()
        if inferior.pid <= 0 or gdb.selected_thread() is None:
            raise RuntimeError("the program did not stop")
        results["pid"] = inferior.pid
        _write(config["output"], results)  # the pid first: the caller removes its perf map
        results.update(_time_commands(gdb, config["commands"], config["reps"],
                                      config["pair_with_disabled"]))
    except Exception as error:  # reported by the caller, with GDB's stderr
        results["error"] = repr(error)
    _write(config["output"], results)
    gdb.execute("kill")


def _time_commands(gdb, commands: List[str], reps: int, pair_with_disabled: bool) -> Dict:
    """CPU seconds: one cold run of the first command, then ``reps`` rounds of every
    command, the order rotating each round so neither always comes first.  With
    ``pair_with_disabled`` every run has a twin while the plugin is disabled, right
    before or after it.  Also the frames each command listed, per state."""
    variants = [(command, enabled) for command in commands
                for enabled in ((True, False) if pair_with_disabled else (True,))]
    cold, text = _timed(gdb, commands[0])
    timed: Dict[str, Dict] = {c: {"cpu": [], "cpu_disabled": [], "shapes": {}} for c in commands}
    timed[commands[0]]["shapes"]["cpu"] = frame_shape(text)
    for index in range(reps):
        turn = index % len(variants)
        for command, enabled in variants[turn:] + variants[:turn]:
            if pair_with_disabled:
                _enable_plugin(gdb, enabled)
            key = "cpu" if enabled else "cpu_disabled"
            seconds, text = _timed(gdb, command)
            timed[command][key].append(seconds)
            timed[command]["shapes"].setdefault(key, frame_shape(text))
    if pair_with_disabled:
        _enable_plugin(gdb, True)
    return {"cold": cold, "commands": timed}


def _timed(gdb, command: str):
    # Drop GDB's frame cache, or a repeated bt would not unwind anything again.
    gdb.execute("maintenance flush register-cache")
    start = time.process_time()
    text = gdb.execute(command, to_string=True)
    return time.process_time() - start, text


def _enable_plugin(gdb, enabled: bool) -> None:
    """GDB's own switches for the plugin's unwinder and frame filter.  Disabled, they
    cost an attribute check per frame: the same session then measures plain GDB too,
    a fraction of a second away, where machine load is alike."""
    verb = "enable" if enabled else "disable"
    gdb.execute(f"{verb} unwinder global {PLUGIN_NAME}", to_string=True)
    gdb.execute(f"{verb} frame-filter global {PLUGIN_NAME}", to_string=True)


def frame_shape(bt_text: str) -> Dict:
    """How many frames a bt lists, how many of them are JIT frames, and the outermost."""
    names = [m.group(2) for m in map(FRAME_LINE.match, bt_text.splitlines()) if m]
    return {"frames": len(names), "jit": sum(1 for n in names if JIT_NAME.match(n)),
            "outermost": names[-1] if names else ""}


def _write(path: str, results: Dict) -> None:
    with open(path, "w") as handle:
        json.dump(results, handle)


# --- outside GDB: fixtures and sessions ---------------------------------------------------

def compile_plugin() -> None:
    """Write the plugin's bytecode, as an install or a first import does, before any
    debugger loads it: with PYTHONDONTWRITEBYTECODE set (as on CI machines) and
    sources newer than their .pyc, every session would compile each module it imports,
    and the benches would time the compiler.  All the debuggers here run Python 3.11."""
    import compileall
    compileall.compile_dir(str(REPO / "plugin"), quiet=1)


def build_fixture(name: str) -> Path:
    """build/NAME, compiled from tests/fixtures/NAME.c when missing or older."""
    source, binary = FIXTURES / f"{name}.c", BUILD / name
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
        return binary
    BUILD.mkdir(exist_ok=True)
    # Compile beside the target and rename: a test run may be using the old binary.
    partial = binary.with_name(f".{name}.{os.getpid()}")
    subprocess.run(["gcc", *CFLAGS, "-o", str(partial), str(source)], check=True)
    os.replace(partial, binary)
    return binary


@dataclass
class Session:
    """One GDB run of one scenario: CPU seconds of ``run``, of the first command's cold
    run, and of each command's warm runs."""
    run: float
    cold: float
    commands: Dict[str, Dict]

    def warm(self, command: str) -> List[float]:
        return self.commands[command]["cpu"]

    def warm_disabled(self, command: str) -> List[float]:
        """Runs with the plugin disabled; the i-th was paired with ``warm()[i]``."""
        return self.commands[command]["cpu_disabled"]

    def shapes(self, command: str) -> Dict[str, Dict]:
        return self.commands[command]["shapes"]

    def shape(self, command: str) -> Dict:
        return self.shapes(command)["cpu"]


def gdb_environment() -> Dict[str, str]:
    """Our environment minus Python variables: a venv's PYTHONHOME/PYTHONPATH would
    break Debian's GDB, and the venv GDB's wrapper sets its own.  Without
    PYTHONDONTWRITEBYTECODE too: with it, every GDB compiles the plugin's modules again
    (~20 ms of a load), where an installed plugin is compiled once, at its first load."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONHOME", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}


def run_session(gdb: str, scenario: Scenario, plugin: bool, commands: List[str],
                reps: int, pair_with_disabled: bool = False) -> Session:
    with tempfile.TemporaryDirectory(prefix="bt-bench-") as scratch:
        output = Path(scratch) / "results.json"
        env = gdb_environment()
        env[CONFIG_ENV] = json.dumps({"output": str(output), "commands": commands,
                                      "reps": reps, "pair_with_disabled": pair_with_disabled})
        argv = [gdb, *GDB_FLAGS, *(["-x", str(PLUGIN)] if plugin else []),
                "-x", str(Path(__file__).resolve()),
                "--args", str(build_fixture(scenario.program)), *scenario.args]
        completed = None
        try:
            completed = subprocess.run(argv, env=env, capture_output=True, text=True,
                                       errors="replace", timeout=SESSION_TIMEOUT)
            results = json.loads(output.read_text()) if output.exists() else {}
        finally:
            _remove_perf_map(output, scenario)
    if "error" in results or not results.get("commands"):
        stderr = completed.stderr[-2000:] if completed else ""
        raise RuntimeError(f"{gdb} {scenario.label}: {results.get('error', 'no results')}\n"
                           f"{stderr}")
    return Session(results["run"], results["cold"], results["commands"])


def _remove_perf_map(output: Path, scenario: Scenario) -> None:
    """toyjit --perf-map leaves /tmp/perf-PID.map behind; the driver reported PID."""
    if not scenario.perf_map or not output.exists():
        return
    pid = json.loads(output.read_text()).get("pid")
    if pid:
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)


def check_shape(session: Session, command: str, scenario: Scenario, plugin: bool) -> None:
    """Refuse to report times of a bt that did not walk the whole stack."""
    for state, shape in session.shapes(command).items():
        problems = []
        if shape["frames"] < scenario.min_frames:
            problems.append(f"{shape['frames']} frames, expected >= {scenario.min_frames}")
        if shape["outermost"] != "main":
            problems.append(f"outermost frame is {shape['outermost']!r}, not main")
        if plugin and state == "cpu" and shape["jit"] != scenario.jit_frames:
            problems.append(f"{shape['jit']} JIT frames, expected {scenario.jit_frames}")
        if problems:
            mode = ("plugin" if state == "cpu" else "plugin disabled") if plugin else "plain"
            raise RuntimeError(f"{scenario.label} `{command}` ({mode}): "
                               f"{'; '.join(problems)}")


# --- measurements ---------------------------------------------------------------------

@dataclass
class NativeResult:
    """CPU seconds of bt on the native stack, all sessions' samples per mode."""
    scenario: Scenario
    frames: int
    run: Dict[str, List[float]]     # "plain", "plugin": the run to the stop
    cold: Dict[str, List[float]]    # the first bt after the stop
    warm: Dict[str, List[float]]    # "plain", "plugin", "disabled" (plugin sessions)
    pair_ratios: List[float]        # plugin / disabled, pairs a fraction of a second apart

    def median(self, part: str, mode: str) -> float:
        return statistics.median(getattr(self, part)[mode])

    @property
    def ratio(self) -> float:
        """Plugin vs plain GDB: medians of separate sessions."""
        return self.median("warm", "plugin") / self.median("warm", "plain")

    @property
    def paired_ratio(self) -> float:
        """Plugin vs disabled plugin in the same session: the median of pair ratios.
        Machine load that drifts over seconds cancels within a pair."""
        return statistics.median(self.pair_ratios)

    @property
    def plugin_per_frame(self) -> float:
        return self.median("warm", "plugin") / self.frames


def measure_native(gdb: str, rounds: int, reps: int,
                   scenario: Scenario = NATIVE) -> NativeResult:
    """Plain and plugin sessions alternate, so drifting machine load hits both alike."""
    modes = ("plain", "plugin", "disabled")
    result = NativeResult(scenario, 0, {m: [] for m in modes}, {m: [] for m in modes},
                          {m: [] for m in modes}, [])
    for _ in range(rounds):
        for plugin in (False, True):
            session = run_session(gdb, scenario, plugin, ["bt"], reps,
                                  pair_with_disabled=plugin)
            check_shape(session, "bt", scenario, plugin)
            mode = "plugin" if plugin else "plain"
            result.frames = session.shape("bt")["frames"]
            result.run[mode].append(session.run)
            result.cold[mode].append(session.cold)
            result.warm[mode].extend(session.warm("bt"))
            if plugin:
                disabled = session.warm_disabled("bt")
                result.warm["disabled"].extend(disabled)
                result.pair_ratios.extend(on / off for on, off in zip(session.warm("bt"),
                                                                      disabled))
    return result


@dataclass
class WholeResult:
    """``gdb -batch -ex run -ex bt`` start to end: seconds per mode, and the ratios of
    the pairs (plugin run / plain run right before or after it)."""
    scenario: Scenario
    wall: Dict[str, List[float]]
    cpu: Dict[str, List[float]]
    wall_ratios: List[float]
    cpu_ratios: List[float]


def whole_run(gdb: str, scenario: Scenario, plugin: bool):
    """Wall and CPU seconds (GDB and the program it ran) of one whole GDB process."""
    argv = [gdb, *GDB_FLAGS, *(["-x", str(PLUGIN)] if plugin else []),
            "-ex", "set pagination off", "-ex", "run", "-ex", "bt", "-ex", "kill",
            "--args", str(build_fixture(scenario.program)), *scenario.args]
    before = os.times()
    start = time.perf_counter()
    completed = subprocess.run(argv, env=gdb_environment(), capture_output=True, text=True,
                               errors="replace", timeout=SESSION_TIMEOUT)
    wall = time.perf_counter() - start
    after = os.times()
    shape = frame_shape(completed.stdout)
    if shape["frames"] < scenario.min_frames or shape["outermost"] != "main":
        raise RuntimeError(f"{gdb} {scenario.label} whole process: bt listed "
                           f"{shape['frames']} frames ending in {shape['outermost']!r}\n"
                           f"{completed.stderr[-2000:]}")
    cpu = (after.children_user + after.children_system
           - before.children_user - before.children_system)
    return wall, cpu


def measure_whole(gdb: str, scenario: Scenario, rounds: int) -> WholeResult:
    """Plain and plugin runs alternate, which one comes first too."""
    result = WholeResult(scenario, {"plain": [], "plugin": []}, {"plain": [], "plugin": []},
                         [], [])
    for plugin in (False, True):  # warm the file cache and the plugin's bytecode cache
        whole_run(gdb, scenario, plugin)
    for index in range(rounds):
        order = (False, True) if index % 2 == 0 else (True, False)
        times = {plugin: whole_run(gdb, scenario, plugin) for plugin in order}
        for plugin, (wall, cpu) in times.items():
            mode = "plugin" if plugin else "plain"
            result.wall[mode].append(wall)
            result.cpu[mode].append(cpu)
        result.wall_ratios.append(times[True][0] / times[False][0])
        result.cpu_ratios.append(times[True][1] / times[False][1])
    return result


@dataclass
class JitResult:
    label: str
    frames: int
    jit_frames: int
    cold: float
    warm: float
    warm_unwind_only: float   # bt -no-filters: the unwinder without the frame filter
    native_per_frame: float

    def per_jit_frame(self, total: float) -> float:
        """Seconds per JIT frame once the stack's native frames are paid for."""
        native_frames = self.frames - self.jit_frames
        return (total - native_frames * self.native_per_frame) / self.jit_frames


def measure_jit(gdb: str, scenario: Scenario, reps: int, native: NativeResult) -> JitResult:
    commands = ["bt", "bt -no-filters"]
    session = run_session(gdb, scenario, True, commands, reps)
    for command in commands:
        check_shape(session, command, scenario, plugin=True)
    shape = session.shape("bt")
    return JitResult(scenario.label, shape["frames"], shape["jit"], session.cold,
                     statistics.median(session.warm("bt")),
                     statistics.median(session.warm("bt -no-filters")),
                     native.plugin_per_frame)


# --- report -----------------------------------------------------------------------------

def gdb_version(gdb: str) -> str:
    first = subprocess.run([gdb, "--version"], capture_output=True, text=True, errors="replace",
                           env=gdb_environment()).stdout.splitlines()[0]
    match = re.search(r"(\d+\.\d+)\S*$", first)
    return f"GDB {match.group(1) if match else first}"


def markdown_table(headers: List[str], rows: List[List[str]]) -> str:
    """A pipe table: readable in a terminal, pastes into docs/performance.md as is."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), rule, *map(line, rows)])


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}"


def medians_ms(r: NativeResult, part: str, modes=("plain", "plugin")) -> str:
    return " / ".join(ms(r.median(part, mode)) for mode in modes)


NATIVE_HEADERS = ["gdb", "process", "frames", "run to stop ms", "cold bt ms",
                  "warm bt ms (plain / disabled / plugin)", "ratio vs plain", "paired ratio",
                  "goal", "met"]
WHOLE_HEADERS = ["gdb", "process", "wall ms (plain / plugin)", "wall ratio",
                 "CPU ms (plain / plugin)", "CPU ratio", "goal", "met"]
JIT_HEADERS = ["gdb", "JIT stack", "JIT/all frames", "cold bt ms", "warm bt ms",
               "µs/JIT frame", "µs/JIT frame, unwind only"]


def native_row(version: str, r: NativeResult) -> List[str]:
    goal = r.scenario.goal
    return [version, r.scenario.label, str(r.frames), medians_ms(r, "run"),
            medians_ms(r, "cold"), medians_ms(r, "warm", ("plain", "disabled", "plugin")),
            f"{r.ratio:.3f}", f"{r.paired_ratio:.3f}", f"<= {goal:.2f}",
            "yes" if r.paired_ratio <= goal else "no"]


def whole_row(version: str, r: WholeResult) -> List[str]:
    goal = r.scenario.goal
    wall, cpu = statistics.median(r.wall_ratios), statistics.median(r.cpu_ratios)
    return [version, r.scenario.label,
            " / ".join(ms(statistics.median(r.wall[m])) for m in ("plain", "plugin")),
            f"{wall:.3f}",
            " / ".join(ms(statistics.median(r.cpu[m])) for m in ("plain", "plugin")),
            f"{cpu:.3f}", f"<= {goal:.2f}", "yes" if wall <= goal else "no"]


def jit_row(version: str, r: JitResult) -> List[str]:
    return [version, r.label, f"{r.jit_frames}/{r.frames}", ms(r.cold), ms(r.warm),
            f"{r.per_jit_frame(r.warm) * 1e6:.0f}",
            f"{r.per_jit_frame(r.warm_unwind_only) * 1e6:.0f}"]


def print_report(native_rows: List[List[str]], jit_rows: List[List[str]],
                 whole_rows: List[List[str]]) -> None:
    print("Native stack of 2,000 frames, in a process without / with JIT code: median\n"
          "CPU ms of bt inside GDB, plain GDB / GDB with jit-unwind.  Paired ratio: plugin\n"
          "enabled vs disabled in one session, pairs alternating; the goal is judged on\n"
          "it, the least disturbed by machine load.\n")
    print(markdown_table(NATIVE_HEADERS, native_rows))
    if whole_rows:
        print("\nWhole process, gdb -batch -ex run -ex bt: medians of plain and plugin runs,\n"
              "and of the ratios of the pairs (wall time judged)\n")
        print(markdown_table(WHOLE_HEADERS, whole_rows))
    print("\nJIT stacks, GDB with jit-unwind: median CPU ms; µs per JIT frame after "
          "subtracting\nthe native frames at the native stack's per-frame cost "
          "(unwind only: bt -no-filters)\n")
    print(markdown_table(JIT_HEADERS, jit_rows))


# --- command line -----------------------------------------------------------------------

def default_gdbs() -> List[str]:
    candidates = [Path("/usr/bin/gdb"), REPO / ".venv" / "bin" / "gdb"]
    return [str(path) for path in candidates if path.exists()]


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gdb", action="append", metavar="PATH",
                        help="a GDB to measure (repeatable; default: /usr/bin/gdb and "
                             "<repo>/.venv/bin/gdb when present)")
    parser.add_argument("--rounds", type=positive_int, default=5,
                        help="plain/plugin session pairs on the native stack (default 5)")
    parser.add_argument("--reps", type=positive_int, default=3,
                        help="warm bt runs per native session (default 3)")
    parser.add_argument("--whole-rounds", type=int, default=8,
                        help="plain/plugin pairs of whole GDB processes per native stack "
                             "(default 8; 0 skips them)")
    parser.add_argument("--no-jit", action="store_true",
                        help="skip the JIT stacks (µs per JIT frame)")
    parser.add_argument("--jit-reps", type=positive_int, default=3,
                        help="warm runs of bt and of bt -no-filters per JIT session "
                             "(default 3; a JIT bt takes 5-10x longer)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    compile_plugin()
    gdbs = args.gdb or default_gdbs()
    if not gdbs:
        sys.exit("no GDB found: pass --gdb PATH")
    started = time.perf_counter()
    native_rows, jit_rows, whole_rows = [], [], []
    for gdb in gdbs:
        version = gdb_version(gdb)
        print(f"measuring {version} ({gdb}) ...", file=sys.stderr, flush=True)
        native = None
        for scenario in NATIVE_SCENARIOS:
            result = measure_native(gdb, args.rounds, args.reps, scenario)
            native = native or result
            native_rows.append(native_row(version, result))
            if args.whole_rounds > 0:
                whole_rows.append(whole_row(version, measure_whole(gdb, scenario,
                                                                   args.whole_rounds)))
        for scenario in [] if args.no_jit else JIT_SCENARIOS:
            jit_rows.append(jit_row(version, measure_jit(gdb, scenario, args.jit_reps,
                                                         native)))
    print_report(native_rows, jit_rows, whole_rows)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{time.perf_counter() - started:.0f} s on {os.cpu_count()} CPUs, "
          f"load average now {load}")
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
