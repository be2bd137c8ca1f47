#!/usr/bin/env python3
"""What loading the JIT symbol file costs LLDB, against the first ``bt`` of the same stop:
bench/symbol_file_cost.py's measure (GDB) for LLDB 23 (the venv's lldb module, frame
provider) and Debian's lldb-19 (no provider; ``bt`` names JIT frames through
frame-format).

usage: .venv/bin/python bench/lldb_symbol_file_cost.py [--functions N] [--sessions N]
                                                        [--no-lldb19]

``build/manyjit N --perf-map`` (N JIT functions, default 10,000, a perf-map line each)
runs to its SIGTRAP with ``jit-unwind symbol-file off``; then, in the same session:

* first bt: the first ``bt`` after the stop (LLDB 23 launches the program through
  ``SBTarget.Launch``, which shows no frame at the stop: ``run`` would unwind the
  thread, and the provider do its work, before ``bt``);
* load: ``jit-unwind symbol-file on``: choose the regions, write the ELF (names,
  addresses, .eh_frame for the code whose start the plugin decodes), ``AddModule`` it at
  slide 0 (what every stop whose JIT code changed costs);
* bt after: the next ``bt``.

Live, and on a core of the same process (``process save-core --style full``) opened in a
new session.  Each session checks that ``image lookup -n`` finds the last function in the
module and that it was not there before.  Times are CPU time of the LLDB process (all its
threads; LLDB 23 runs in bench/lldb_session.py, a child process, through the SB API;
lldb-19 times itself with ``script`` commands between ours); medians over the sessions,
and the ratio load / first bt (goal: < 0.20).  The "(wall)" column is the same ratio in
elapsed time.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from lldb_costs import session
from symbol_file_cost import _build, _report
from bt_overhead import compile_plugin

LLDB19 = Path("/usr/bin/lldb-19")
LLDB_INIT = REPO / "lldb_init.py"
OFF, ON = "jit-unwind symbol-file off", "jit-unwind symbol-file on"


def _check(name: str, before: str, after: str) -> None:
    """The module names the last function after the load, and did not before."""
    if "1 match found" in before or "1 match found" not in after or name not in after:
        raise RuntimeError(f"the module does not name {name}:\n{before}\n{after}")


def lldb23(binary: Path, functions: int, core: Path, on_core: bool, save: bool) -> Dict:
    last = f"many::f{functions - 1}"
    before, after = f"image lookup -s {last}", f"image lookup -n {last}"
    commands = [before, "bt", ON, "bt --provider 0", after, "process status"]
    if save:
        commands.append(f"process save-core --style full {core}")
    if on_core:
        out = session([str(binary)], commands, True, core=core, before=[OFF])
    else:
        out = session([str(binary), str(functions), "--perf-map"], commands, True,
                      before=[OFF], quiet_launch=True)
    _check(last, out[before]["text"], out[after]["text"])
    first, load = out["bt"], out[ON]
    if "many::f" not in first["text"]:
        raise RuntimeError(f"bt does not name the JIT frame:\n{first['text'][-1500:]}")
    pid = re.search(r"Process (\d+)", out["process status"]["text"])
    return {"first_bt": first["cpu"], "load": load["cpu"], "first_bt_wall": first["wall"],
            "load_wall": load["wall"], "pid": int(pid.group(1)) if pid else None}


TIMED = '''script _jit_t = (time.process_time(), time.perf_counter())
{command}
script print("TIMED {label}", time.process_time() - _jit_t[0], time.perf_counter() - _jit_t[1])'''


def lldb19(binary: Path, functions: int, core: Path, on_core: bool, save: bool) -> Dict:
    last = f"many::f{functions - 1}"
    lines = [f"command script import {LLDB_INIT}", OFF, "script import time"]
    if on_core:
        lines.append(f"target create --core {core} {binary}")
    else:
        lines += [f"file {binary}", f"settings set -- target.run-args {functions} --perf-map",
                  "process launch -i /dev/null"]
    # (a failing command would end lldb-19's command file: look the symbol up in Python)
    count = f"script print('SYMBOLS', lldb.target.FindSymbols('{last}').GetSize())"
    lines += [count, TIMED.format(command="bt", label="first_bt"),
              TIMED.format(command=ON, label="load"), count]
    if save:
        lines.append(f"process save-core --style full {core}")
    if not on_core:
        lines.append("process kill")
    with tempfile.NamedTemporaryFile("w", suffix=".lldb") as script:
        script.write("\n".join([*lines, "quit"]) + "\n")
        script.flush()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}
        result = subprocess.run([str(LLDB19), "--no-lldbinit", "-s", script.name],
                                capture_output=True, text=True, errors="replace", timeout=600,
                                env=env, stdin=subprocess.DEVNULL)
    output = result.stdout + result.stderr
    times = {label: (float(cpu), float(wall)) for label, cpu, wall in
             re.findall(r"^TIMED (\w+) (\S+) (\S+)$", output, re.M)}
    if set(times) != {"first_bt", "load"}:
        raise RuntimeError(f"lldb-19 session failed:\n{output[-3000:]}")
    if re.findall(r"^SYMBOLS (\d+)$", output, re.M) != ["0", "1"]:
        raise RuntimeError(f"the module does not name {last}:\n{output[-3000:]}")
    pid = re.search(r"Process (\d+) (?:launched|stopped)", output)
    return {"first_bt": times["first_bt"][0], "load": times["load"][0],
            "first_bt_wall": times["first_bt"][1], "load_wall": times["load"][1],
            "pid": int(pid.group(1)) if pid else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--no-lldb19", action="store_true")
    options = parser.parse_args()
    compile_plugin()
    binary = _build(options.functions)
    debuggers = [("LLDB 23", lldb23)]
    if LLDB19.exists() and not options.no_lldb19:
        debuggers.append(("lldb-19", lldb19))
    print(f"manyjit {options.functions} --perf-map, {options.sessions} sessions each, "
          f"CPU time of LLDB, medians")
    print(f"{'LLDB, stack':<26} {'first bt':>10} {'load':>10} {'load/first bt':>14} "
          f"{'(wall)':>7}")
    for label, measure in debuggers:
        with tempfile.TemporaryDirectory() as directory:
            core = Path(directory) / "manyjit.dmp"
            live: List[Dict] = []
            try:
                for index in range(options.sessions):
                    live.append(measure(binary, options.functions, core, on_core=False,
                                        save=index == 0))
                # The core's JIT code is named from its process's perf map, still there.
                cores = [measure(binary, options.functions, core, on_core=True, save=False)
                         for _ in range(options.sessions)]
            finally:
                for run in live:
                    if run["pid"]:
                        Path(f"/tmp/perf-{run['pid']}.map").unlink(missing_ok=True)
        _report(f"{label}, live", live)
        _report(f"{label}, core", cores)
    return 0


if __name__ == "__main__":
    sys.exit(main())
