"""Drive LLDB 23 (the venv's lldb-for-pwndbg) through its SB API in a subprocess.

``lldb -b`` stops running ``-o`` commands once the process stops on a signal, so tests
run this file with the venv's Python instead: it creates a debugger, imports
lldb_init.py, loads the program (or a core), runs each command with HandleCommand and
prints ``(lldb) COMMAND`` followed by what the command printed.

As a library: ``run_lldb(commands, program=..., core=...)`` returns that transcript.
"""

import glob
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
LLDB_INIT = REPO / "lldb_init.py"
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
LLDB_TIMEOUT = 300
# A pseudo-command: wait (at most a few seconds) until the frame provider is on the
# target; it is registered from a listener thread when a core file is loaded.
WAIT_FOR_PROVIDER = "#wait-for-provider"
# A pseudo-command: ``frame select N`` on every frame of the selected thread.
SELECT_EVERY_FRAME = "#select-every-frame"


def lldb_server() -> str:
    """lldb-for-pwndbg's lldb-server, which launching a process from Python needs."""
    found = glob.glob(str(REPO / ".venv" / "lib" / "python3*" / "site-packages" /
                          "lldb_for_pwndbg" / "_vendor" / "bin" / "lldb-server"))
    assert found, "lldb-for-pwndbg is not installed in .venv: run `make venv`"
    return found[0]


def run_lldb(commands: Sequence[str], program: Sequence[str] = (),
             core: Optional[Path] = None, plugin: bool = True) -> str:
    """Run ``commands`` in LLDB on ``program`` (path and arguments) or on ``core``."""
    spec = {"commands": list(commands), "program": [str(p) for p in program],
            "core": str(core) if core else None, "plugin": plugin}
    env = dict(os.environ, LLDB_DEBUGSERVER_PATH=lldb_server())
    for name in ("PYTHONHOME", "PYTHONPATH"):
        env.pop(name, None)
    started = time.time()
    with subprocess.Popen([str(VENV_PYTHON), __file__, json.dumps(spec)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          errors="replace", stdin=subprocess.DEVNULL, env=env) as lldb_process:
        try:
            output, errors = lldb_process.communicate(timeout=LLDB_TIMEOUT)
        except subprocess.TimeoutExpired:
            stacks = _native_stacks(lldb_process.pid)
            lldb_process.kill()
            output, errors = lldb_process.communicate()
            output += errors
            raise AssertionError(f"LLDB hung ({LLDB_TIMEOUT} s) on {spec}:\n{output}\n"
                                 f"its threads:\n{stacks}") from None
    output += errors
    assert lldb_process.returncode == 0, \
        f"LLDB's process died ({lldb_process.returncode}):\n{output}"
    from tests.support import assert_no_python_failure, session_output  # the parent's only
    assert_no_python_failure(output)
    return session_output(output, started)


def _native_stacks(pid: int) -> str:
    """Every thread's stack of a hung LLDB (GDB attached for a moment), for the report."""
    try:
        return subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid), "-ex",
                               "thread apply all bt 40"], capture_output=True, text=True,
                              errors="replace", timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return f"(no stacks: {error})"


@dataclass
class LldbFrame:
    level: int
    function: str  # the function's name without module and arguments, or a JIT name
    line: str


_FRAME = re.compile(r"^\s*\*?\s*frame #(\d+): (?:0x[0-9a-f]+ )?(.*)$")


def _function(text: str) -> str:
    if text.startswith("["):  # a JIT frame's name: "[jit 0x...+0x...] [synthetic]"
        return text
    text = text.split("`", 1)[-1]
    return re.split(r"[( ]", text, maxsplit=1)[0] if text else "??"


def parse_lldb_backtrace(output: str) -> List[LldbFrame]:
    """Frames of the last ``bt`` in ``output``."""
    frames: List[LldbFrame] = []
    for line in output.splitlines():
        match = _FRAME.match(line)
        if match is None:
            continue
        level = int(match.group(1))
        if level == 0:
            frames = []
        frames.append(LldbFrame(level, _function(match.group(2).strip()), line))
    return frames


# What LLDB lists after main (it has no "backtrace past-main off").
AFTER_MAIN = {"__libc_start_call_main", "__libc_start_main_impl", "_start"}


def frames_to_main(output: str) -> List[LldbFrame]:
    """The frames of the last bt up to main; checks that those after it are libc's."""
    frames = parse_lldb_backtrace(output)
    names = [f.function for f in frames]
    assert "main" in names, output
    end = names.index("main") + 1
    assert set(names[end:]) <= AFTER_MAIN, output
    return frames[:end]


def _text_of(lldb, result) -> str:
    """A command's output and errors; bytes that are not UTF-8 (a corrupted core's file
    names) replaced, where GetOutput() would raise."""
    try:
        return result.GetOutput() + result.GetError()
    except UnicodeDecodeError:
        import tempfile
        with tempfile.TemporaryFile("w+b") as raw:
            result.PutOutput(lldb.SBFile(raw.fileno(), "w", False))
            result.PutError(lldb.SBFile(raw.fileno(), "w", False))
            raw.seek(0)
            return raw.read().decode("utf-8", "replace")


def _main(spec) -> None:
    import time

    import lldb

    debugger = lldb.SBDebugger.Create()
    debugger.SetAsync(False)
    interpreter = debugger.GetCommandInterpreter()
    # LLDB 23.1 loads a core's modules on a thread pool by default, and two of its
    # workers deadlocked now and then in `target create --core` (ObjectFile section
    # locks taken in opposite orders; LLDB's own doing: the plugin's thread was idle in
    # the hang report's stacks): load them one by one in tests.
    interpreter.HandleCommand("settings set target.parallel-module-load false",
                              lldb.SBCommandReturnObject())

    def run(command: str) -> None:
        print(f"(lldb) {command}", flush=True)
        if command == WAIT_FOR_PROVIDER:
            for _ in range(100):
                result = lldb.SBCommandReturnObject()
                interpreter.HandleCommand("target frame-provider list", result)
                if "JitFrameProvider" in result.GetOutput():
                    return
                time.sleep(0.05)
            print("no frame provider after 5 s")
            return
        if command == SELECT_EVERY_FRAME:
            thread = debugger.GetSelectedTarget().GetProcess().GetSelectedThread()
            count = thread.GetNumFrames()
            print(f"selecting {count} frames")
            for index in range(count):
                run(f"frame select {index}")
            return
        result = lldb.SBCommandReturnObject()
        interpreter.HandleCommand(command, result)
        print(_text_of(lldb, result), flush=True)

    if spec["plugin"]:
        run(f"command script import {LLDB_INIT}")
    program = spec["program"]
    if spec["core"]:
        run(f"target create --core {spec['core']} {program[0]}")
    elif program:
        run(f"file {program[0]}")
        if len(program) > 1:
            run("settings set -- target.run-args " + " ".join(program[1:]))
    for command in spec["commands"]:
        run(command)
    process = debugger.GetSelectedTarget().GetProcess()
    if process.IsValid() and not spec["core"]:
        process.Kill()
    lldb.SBDebugger.Destroy(debugger)


if __name__ == "__main__":
    # LLDB's output may hold any bytes (file names from a corrupted core): never fail on them.
    sys.stdout.reconfigure(errors="replace")
    _main(json.loads(sys.argv[1]))
