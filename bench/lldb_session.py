"""One LLDB 23 session for the LLDB benches (bench/lldb_costs.py's ``session``): run by
the venv's Python with a JSON spec as its argument; prints the timings as JSON.

Its own file, importing little: a module imported here would be ready for the plugin,
and first-use imports are part of what a user's session pays.
"""

import json
import os
import sys
import time
from typing import Dict

LLDB_INIT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "lldb_init.py")


def child(spec: Dict) -> Dict:
    import lldb

    debugger = lldb.SBDebugger.Create()
    debugger.SetAsync(False)
    interpreter = debugger.GetCommandInterpreter()

    def run(command: str):
        result = lldb.SBCommandReturnObject()
        cpu, wall = time.process_time(), time.perf_counter()
        interpreter.HandleCommand(command, result)
        return (time.process_time() - cpu, time.perf_counter() - wall,
                result.GetOutput() + result.GetError())

    out: Dict = {}
    # As in the tests (tests/lldb_driver.py): LLDB 23.1's parallel module loading
    # deadlocked now and then in `target create --core`; both kinds of session alike.
    run("settings set target.parallel-module-load false")
    if spec["plugin"]:
        out["load"] = run(f"command script import {LLDB_INIT}")[:2]
    for command in spec.get("before", ()):  # settings, before the program or core
        run(command)
    if spec["core"]:
        run(f"target create --core {spec['core']} {spec['program'][0]}")
        # The provider is registered from a listener thread once a core is loaded.
        for _ in range(100):
            if not spec["plugin"] or "JitFrameProvider" in run(
                    "target frame-provider list")[2]:
                break
            time.sleep(0.05)
    else:
        run(f"file {spec['program'][0]}")
        run("settings set -- target.run-args " + " ".join(spec["program"][1:]))
        if spec.get("quiet_launch"):
            # SBTarget.Launch prints no stop (no frame 0 shown): the stop's frames are
            # unwound by the first command, as on a core.
            cpu, wall = time.process_time(), time.perf_counter()
            error = lldb.SBError()
            target = debugger.GetSelectedTarget()
            target.Launch(target.GetLaunchInfo(), error)
            out["run"] = (time.process_time() - cpu, time.perf_counter() - wall)
        else:
            out["run"] = run("run")[:2]
    for command in spec["commands"]:
        cpu, wall, text = run(command)
        out[command] = {"cpu": cpu, "wall": wall, "text": text}
    process = debugger.GetSelectedTarget().GetProcess()
    if process.IsValid() and not spec["core"]:
        process.Kill()
    lldb.SBDebugger.Destroy(debugger)
    return out


if __name__ == "__main__":
    print(json.dumps(child(json.loads(sys.argv[1]))))
