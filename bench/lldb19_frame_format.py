#!/usr/bin/env python3
"""What naming JIT frames through ``frame-format`` costs lldb-19's ``bt`` (Debian's
LLDB 19, no frame providers; ``jit-unwind frame-format``).

usage: python3 bench/lldb19_frame_format.py [--rounds N]

In one stop of each program, ``bt`` is printed again and again, with the setting on and
off in turn (LLDB keeps a stop's frames, so these measure printing the lines: what the
format changes), typed as a user would (a command file).  The first ``bt`` of the stop
is not counted.  Medians of the CPU time of the LLDB process.

* deepstack 2000 (2,008 frames in lldb-19, all with line entries: no script call), with and without
  a page of JIT code: ratio on / off.
* toyjit fp 1999 sigtrap: 2,000 frame-pointer JIT frames that LLDB 19 unwinds by
  itself, outside any module (one script call each); with --perf-map, inside the symbol
  file's module (two calls each): µs per JIT frame =
  (on - off - native frames x the native per-frame difference) / JIT frames.
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LLDB19 = Path("/usr/bin/lldb-19")


def measure(program, rounds):
    """Times of ``bt`` typed at LLDB's prompt (from a command file, as a user's: inside
    a Python command LLDB would skip setting up its Python session for each script call,
    which is most of a call's cost), and the two last outputs."""
    commands = [f"command script import {REPO / 'lldb_init.py'}",
                f"file {program[0]}",
                "settings set -- target.run-args " + " ".join(map(str, program[1:])),
                "process launch -i /dev/null",
                "script print('inferior-pid', lldb.debugger.GetSelectedTarget()."
                "GetProcess().GetProcessID())",
                "script import time; jit_unwind_times = {'on': [], 'off': []}",
                "bt"]  # the stop's unwind
    for _ in range(rounds):
        for mode in ("off", "on"):
            commands += [f"jit-unwind frame-format {mode}",
                         "script jit_unwind_t0 = time.process_time()", "bt",
                         f"script jit_unwind_times['{mode}'].append("
                         "time.process_time() - jit_unwind_t0)"]
    commands += ["script import json; print('RESULT', json.dumps(jit_unwind_times))",
                 "kill", "quit"]
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "commands.lldb"
        script.write_text("\n".join(commands) + "\n")
        output = subprocess.run([str(LLDB19), "--no-lldbinit", "-s", str(script)],
                                capture_output=True, text=True, errors="replace", timeout=600,
                                stdin=subprocess.DEVNULL).stdout
    for pid in re.findall(r"inferior-pid (\d+)", output):
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
    match = re.search(r"^RESULT (.*)$", output, re.M)
    if match is None:
        sys.exit(f"no result:\n{output}")
    times = json.loads(match.group(1))
    bts = output.split("(lldb) bt\n")
    on, off = bts[-1].split("(lldb) ")[0], bts[-2].split("(lldb) ")[0]
    frames = [line for line in on.splitlines() if re.match(r"\s*\*?\s*frame #\d+:", line)]
    named = sum(1 for a, b in zip(on.splitlines(), off.splitlines()) if a != b)
    return {"on": statistics.median(times["on"]), "off": statistics.median(times["off"]),
            "frames": len(frames), "named": named}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bt_overhead import build_fixture, compile_plugin, markdown_table
    compile_plugin()
    deepstack, toyjit = build_fixture("deepstack"), build_fixture("toyjit")
    rows, native = [], {}
    for label, program in (("deepstack 2000", [deepstack, "2000"]),
                           ("deepstack 2000 --jit-page", [deepstack, "2000", "--jit-page"]),
                           ("toyjit fp 1999", [toyjit, "fp", "1999", "sigtrap"]),
                           ("toyjit fp 1999 --perf-map",
                            [toyjit, "fp", "1999", "sigtrap", "--perf-map"])):
        result = measure(program, args.rounds)
        extra = result["on"] - result["off"]
        if label.startswith("deepstack"):
            native[label] = extra / result["frames"]
            per = f"{native[label] * 1e6:.1f} µs per frame"
        else:
            native_frames = result["frames"] - result["named"]
            per_jit = (extra - native_frames * native["deepstack 2000 --jit-page"]) / max(
                result["named"], 1)
            per = f"{per_jit * 1e6:.0f} µs per JIT frame"
        rows.append([label, str(result["frames"]), str(result["named"]),
                     f"{result['off'] * 1e3:.0f}", f"{result['on'] * 1e3:.0f}",
                     f"{result['on'] / result['off']:.2f}", per])
    print(markdown_table(["lldb-19 bt", "frames", "JIT frames named", "off ms", "on ms",
                          "on / off", "cost"], rows))


if __name__ == "__main__":
    main()
