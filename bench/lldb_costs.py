#!/usr/bin/env python3
"""What jit-unwind costs LLDB 23 (the venv's lldb module, frame provider): native
stacks with and without JIT code, µs per JIT frame, py-mixed-bt on a Python core.

usage: .venv/bin/python bench/lldb_costs.py [--rounds N] [--depth N]

LLDB unwinds a thread once per stop and keeps the frames, and the frame provider reads
the frames LLDB unwound, so a second ``bt`` in the same stop (or ``bt --provider 0``
after ``bt``) measures printing, not unwinding.  Every figure here is therefore the
first command after a stop, in fresh LLDB sessions (bench/lldb_session.py run with the
venv's Python, the lldb module in-process), sessions with and without
``command script import lldb_init.py`` alternating, ``--rounds`` of each; medians.
Times: CPU of the session's process (LLDB's own work, not lldb-server's) and wall time
(which includes the debug server answering memory reads), around ``run`` and the first
``bt`` together (the provider may do its work when the process stops).

* native: ``bt`` of tests/fixtures/deepstack.c 2000 (2,006 frames), without and with a
  page of JIT code (``--jit-page``).  Goals as for GDB: <= 1.05 / <= 1.10.
* provider vs ``bt --provider 0``: plugin sessions whose first command is ``bt`` or
  ``bt --provider 0`` on the same native stacks (issue 8's goal: <= 1.5).
* JIT: ``bt`` of toyjit fp 99 and fp 1999 sigtrap (100 and 2,000 JIT frames, 3 frames
  per JIT frame).  Plain LLDB stops at the first JIT frame, so as for GDB: (bt time -
  native frames x the native stack's per-frame time) / JIT frames.  Goal (GDB 13's):
  <= 50 µs.  Two depths, because LLDB's own cost per synthetic frame grows with the
  depth (docs/performance.md).
* py-mixed-bt and py-mixed-bt --python-only on a core of a 1,000-deep recursion of
  pyenv's CPython 3.12.1 (written by GDB's gcore, as bench/py_mixed_bt.py does).

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

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))
from bt_overhead import (build_fixture, compile_plugin, markdown_table,
                         positive_int)

VENV_PYTHON = REPO / ".venv" / "bin" / "python"


def session(program: List[str], commands: List[str], plugin: bool,
            core: Optional[Path] = None, before: List[str] = (),
            quiet_launch: bool = False) -> Dict:
    from lldb_driver import lldb_server
    spec = {"program": program, "commands": commands, "plugin": plugin,
            "core": str(core) if core else None, "before": list(before),
            "quiet_launch": quiet_launch}
    env = dict(os.environ, LLDB_DEBUGSERVER_PATH=lldb_server())
    for name in ("PYTHONHOME", "PYTHONPATH"):
        env.pop(name, None)
    completed = subprocess.run([str(VENV_PYTHON), str(HERE / "lldb_session.py"), json.dumps(spec)],
                               capture_output=True, text=True, errors="replace", timeout=600,
                               env=env, stdin=subprocess.DEVNULL)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"LLDB session failed:\n{completed.stdout[-2000:]}"
                           f"{completed.stderr[-2000:]}")
    return json.loads(lines[-1])


# --- measurements -------------------------------------------------------------------------

def frame_lines(text: str) -> List[str]:
    return [line for line in text.splitlines() if "frame #" in line]


def ends_in_main(frames: List[str]) -> bool:
    """LLDB lists libc's start-up frames after main."""
    return any("`main" in line for line in frames[-5:])


def native(rounds: int, jit_page: bool) -> Dict:
    program = [str(build_fixture("deepstack")), "2000", *(["--jit-page"] if jit_page else [])]
    samples: Dict[str, Dict[str, List[float]]] = {m: {"cpu": [], "wall": []}
                                                  for m in ("plain", "plugin")}
    for index in range(rounds):
        for plugin in ((False, True) if index % 2 == 0 else (True, False)):
            out = session(program, ["bt"], plugin)
            result = out["bt"]
            frames = frame_lines(result["text"])
            if len(frames) < 2000 or not ends_in_main(frames):
                raise RuntimeError(f"bt listed {len(frames)} frames:\n{result['text'][-1500:]}")
            mode = "plugin" if plugin else "plain"
            # run + bt: the provider may do its work at the stop already.
            samples[mode]["cpu"].append(out["run"][0] + result["cpu"])
            samples[mode]["wall"].append(out["run"][1] + result["wall"])
    return {mode: {k: statistics.median(v) for k, v in parts.items()}
            for mode, parts in samples.items()}


def provider_off(rounds: int, jit_page: bool) -> Dict:
    """Plugin sessions whose first command after the stop is ``bt`` or ``bt --provider
    0`` (LLDB's frames without the provider), alternating; run + that command."""
    program = [str(build_fixture("deepstack")), "2000", *(["--jit-page"] if jit_page else [])]
    commands = {"provider": "bt", "provider 0": "bt --provider 0"}
    samples: Dict[str, Dict[str, List[float]]] = {m: {"cpu": [], "wall": []}
                                                  for m in commands}
    for index in range(rounds):
        for mode in (list(commands) if index % 2 == 0 else list(commands)[::-1]):
            out = session(program, [commands[mode]], True)
            result = out[commands[mode]]
            frames = frame_lines(result["text"])
            if len(frames) < 2000 or not ends_in_main(frames):
                raise RuntimeError(f"bt listed {len(frames)} frames:\n{result['text'][-1500:]}")
            samples[mode]["cpu"].append(out["run"][0] + result["cpu"])
            samples[mode]["wall"].append(out["run"][1] + result["wall"])
    return {mode: {k: statistics.median(v) for k, v in parts.items()}
            for mode, parts in samples.items()}


def jit(rounds: int, depth: int = 1999) -> Dict:
    program = [str(build_fixture("toyjit")), "fp", str(depth), "sigtrap"]
    cpu, wall = [], []
    for _ in range(rounds):
        out = session(program, ["bt"], True)
        result = out["bt"]
        frames = frame_lines(result["text"])
        jit_frames = sum(1 for line in frames if "[jit 0x" in line)
        if jit_frames != depth + 1 or not ends_in_main(frames):
            raise RuntimeError(f"bt listed {jit_frames} JIT frames of {len(frames)}")
        cpu.append(out["run"][0] + result["cpu"])
        wall.append(out["run"][1] + result["wall"])
    return {"frames": len(frames), "jit": depth + 1, "cpu": statistics.median(cpu),
            "wall": statistics.median(wall)}


def mixed(rounds: int, depth: int) -> Optional[Dict]:
    sys.path.insert(0, str(HERE))
    from py_mixed_bt import default_python, make_core
    python = default_python()
    if python is None:
        return None
    with tempfile.TemporaryDirectory(prefix="lldb-bench-") as scratch:
        core = make_core("/usr/bin/gdb", python, depth, Path(scratch))
        commands = ["py-mixed-bt", "py-mixed-bt --python-only"]
        samples = {c: [] for c in commands}
        for _ in range(rounds):
            for command in commands:  # each first after the core's load
                result = session([python], [command], True, core)[command]
                count = result["text"].count("recurse_here")
                if count < depth:
                    raise RuntimeError(f"{command}: {count} Python frames\n"
                                       f"{result['text'][-1500:]}")
                samples[command].append(result["cpu"])
    return {c: statistics.median(v) for c, v in samples.items()}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--depth", type=positive_int, default=1000)
    args = parser.parse_args(argv)
    compile_plugin()
    started = time.perf_counter()
    rows = []
    per_frame = None
    for jit_page in (False, True):
        r = native(args.rounds, jit_page)
        goal = 1.10 if jit_page else 1.05
        ratio_cpu = r["plugin"]["cpu"] / r["plain"]["cpu"]
        ratio_wall = r["plugin"]["wall"] / r["plain"]["wall"]
        if not jit_page:
            # run + bt of the native stack, per frame: the program's start-up is in it
            # too, which makes the µs per JIT frame below a little low.
            per_frame = r["plugin"]["wall"] / 2006, r["plugin"]["cpu"] / 2006
        rows.append(["JIT page" if jit_page else "no JIT code",
                     f"{r['plain']['cpu'] * 1e3:.0f} / {r['plugin']['cpu'] * 1e3:.0f}",
                     f"{ratio_cpu:.3f}",
                     f"{r['plain']['wall'] * 1e3:.0f} / {r['plugin']['wall'] * 1e3:.0f}",
                     f"{ratio_wall:.3f}", f"<= {goal:.2f}",
                     "yes" if max(ratio_cpu, ratio_wall) <= goal else "no"])
    print("LLDB 23, run to the stop + first bt of deepstack 2000 (2,006 frames): median ms, "
          "plain / plugin\n")
    print(markdown_table(["process", "CPU ms", "CPU ratio", "wall ms", "wall ratio", "goal",
                          "met"], rows))
    rows = []
    for jit_page in (False, True):
        r = provider_off(args.rounds, jit_page)
        ratio_cpu = r["provider"]["cpu"] / r["provider 0"]["cpu"]
        ratio_wall = r["provider"]["wall"] / r["provider 0"]["wall"]
        rows.append(["JIT page" if jit_page else "no JIT code",
                     f"{r['provider 0']['cpu'] * 1e3:.0f} / {r['provider']['cpu'] * 1e3:.0f}",
                     f"{ratio_cpu:.3f}",
                     f"{r['provider 0']['wall'] * 1e3:.0f} / {r['provider']['wall'] * 1e3:.0f}",
                     f"{ratio_wall:.3f}", "<= 1.50",
                     "yes" if max(ratio_cpu, ratio_wall) <= 1.5 else "no"])
    print("\nLLDB 23 with the plugin, run to the stop + first `bt --provider 0` / `bt` of "
          "deepstack 2000: median ms\n")
    print(markdown_table(["process", "CPU ms", "CPU ratio", "wall ms", "wall ratio", "goal",
                          "met"], rows))
    rows = []
    for depth in (99, 1999):
        j = jit(max(1, args.rounds // 2), depth)
        natives = j["frames"] - j["jit"]
        us_cpu = (j["cpu"] - natives * per_frame[1]) / j["jit"] * 1e6
        us_wall = (j["wall"] - natives * per_frame[0]) / j["jit"] * 1e6
        rows.append([f"fp {depth}", f"{j['jit']:,} of {j['frames']:,}",
                     f"{j['cpu'] * 1e3:.0f}", f"{j['wall'] * 1e3:.0f}", f"{us_cpu:.0f}",
                     f"{us_wall:.0f}", "<= 50", "yes" if us_cpu <= 50 else "no"])
    print("\nLLDB 23, run to the stop + first bt of toyjit fp DEPTH sigtrap\n")
    print(markdown_table(["stack", "JIT frames", "CPU ms", "wall ms", "µs/JIT frame CPU",
                          "µs/JIT frame wall", "goal", "met"], rows))
    m = mixed(max(1, args.rounds // 2), args.depth)
    if m is not None:
        print(f"\nLLDB 23, core of a {args.depth}-deep CPython 3.12.1 recursion: the "
              "command's median CPU ms, first after the core's load\n")
        print(markdown_table(["command", "CPU ms"],
                             [[c, f"{v * 1e3:.0f}"] for c, v in m.items()]))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{time.perf_counter() - started:.0f} s on {os.cpu_count()} CPUs, "
          f"load average now {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
