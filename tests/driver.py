"""One way to drive every debugger the project supports, for end-to-end tests written once.

A ``Driver`` starts its debugger with the plugin loaded, either on a program it runs to
its first stop (``launch``) or on a core file (``open_core``), runs a list of commands
and returns a ``Transcript``: what each command printed, the process's pid, and the
``py-mixed-bt --json`` documents.  ``launch(..., core=PATH)`` also writes a core file of
the stopped process with the debugger's own command (GDB's ``gcore``, LLDB's
``process save-core``), for ``open_core`` in the same debugger.

The implementations: ``GdbDriver`` (Debian's GDB 13, gdb-for-pwndbg's GDB 18),
``Lldb23Driver`` (lldb-for-pwndbg's LLDB 23 through its SB API, frame providers on) and
``Lldb19Driver`` (Debian's lldb-19 reading a command file).  ``DRIVERS`` maps their
names to them; ``driver(name)`` fails the test when that debugger is missing.
"""

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from tests.lldb_driver import LLDB_INIT, WAIT_FOR_PROVIDER, run_lldb
from tests.support import (GDB_BINARIES, PRINT_PID, assert_no_python_failure,
                           remove_process_files, run_gdb, session_output)

MIXED_JSON = "py-mixed-bt --json --all-threads"
LLDB19 = Path("/usr/bin/lldb-19")
LLDB19_TIMEOUT = 300


@dataclass
class Transcript:
    """What one debugger session printed, split by command."""
    debugger: str
    commands: List[str]
    outputs: List[str]
    whole: str  # a SessionOutput: when the session ran too
    pid: Optional[int] = None

    def output(self, command: str) -> str:
        """What the last run of ``command`` printed."""
        for text, ran in zip(reversed(self.outputs), reversed(self.commands)):
            if ran == command:
                return text
        raise AssertionError(f"{command!r} was not run:\n{self.whole}")

    def document(self, command: str = MIXED_JSON) -> dict:
        """The JSON document ``command`` (a ``py-mixed-bt --json``) printed; a debugger
        may print a warning of its own after it."""
        text = self.output(command)
        start = text.find("{")
        assert start >= 0, f"{self.debugger}: no JSON from {command!r}:\n{self.whole}"
        return json.JSONDecoder().raw_decode(text[start:])[0]

    def remove_perf_files(self) -> None:
        """The perf map and jitdump the process may have written (during the session:
        support.remove_process_files)."""
        if self.pid:
            remove_process_files([self.pid], self.whole)


def _split(whole: str, commands: Sequence[str], prompt: str) -> List[str]:
    """What each command printed, from a transcript that echoes each one as
    ``PROMPT COMMAND`` before its output (in order); "" for a command not echoed."""
    spans: List[Optional[Tuple[int, int]]] = []  # (echo, output) offsets
    position = 0
    for command in commands:
        start = whole.find(f"{prompt}{command}\n", position)
        if start < 0:
            spans.append(None)
            continue
        position = start + len(prompt) + len(command) + 1
        spans.append((start, position))
    found = [span for span in spans if span is not None]
    ends = {span: following[0] for span, following in zip(found, found[1:])}
    return [whole[span[1]:ends.get(span, len(whole))] if span else "" for span in spans]


@dataclass
class Driver:
    name: str

    def available(self) -> bool:
        raise NotImplementedError

    def launch(self, program: Sequence, commands: Sequence[str],
               env: Mapping[str, str] = {}, core: Optional[Path] = None,
               settings: Sequence[str] = ()) -> Transcript:
        """``settings``: debugger commands run before the program starts."""
        raise NotImplementedError

    def open_core(self, program: Sequence, core: Path,
                  commands: Sequence[str]) -> Transcript:
        raise NotImplementedError

    def core_name(self) -> str:
        """A file name for this debugger's core files."""
        return "program.core"


GDB_MARK = "@@jit-unwind-test@@ "


@dataclass
class GdbDriver(Driver):
    binary: Path = Path("/usr/bin/gdb")

    def available(self) -> bool:
        return self.binary.exists()

    def _run(self, commands, program, core=None, setup=()) -> Transcript:
        argv: List[str] = list(setup)
        for command in commands:
            # GDB prints no prompt in batch mode: an echo before each command marks it.
            argv += [f"echo {GDB_MARK}{command}\\n", command]
        whole = run_gdb(self.binary, argv, [str(p) for p in program], core=core)
        pid = re.search(r"^inferior-pid (\d+)", whole, re.M)
        return Transcript(self.name, list(commands), _split(whole, commands, GDB_MARK),
                          whole, int(pid.group(1)) if pid else None)

    def launch(self, program, commands, env: Mapping[str, str] = {}, core=None, settings=()):
        setup = [*settings, *(f"set environment {k}={v}" for k, v in env.items()), "run",
                 PRINT_PID]
        after = [f"gcore {core}"] if core else []
        transcript = self._run([*commands, *after], program, setup=setup)
        assert core is None or core.exists(), transcript.whole
        return transcript

    def open_core(self, program, core, commands):
        return self._run(commands, [program[0]], core=core)


@dataclass
class Lldb23Driver(Driver):
    def available(self) -> bool:
        return True  # tests.lldb_driver fails with the reason when it is not installed

    def _transcript(self, whole: str, commands) -> Transcript:
        pid = re.search(r"Process (\d+) (?:launched|stopped)", whole)
        return Transcript(self.name, list(commands), _split(whole, commands, "(lldb) "),
                          whole, int(pid.group(1)) if pid else None)

    def launch(self, program, commands, env: Mapping[str, str] = {}, core=None, settings=()):
        setup = [*settings, *(f"settings set target.env-vars {k}={v}" for k, v in env.items())]
        after = [f"process save-core --style full {core}"] if core else []
        whole = run_lldb([*setup, "process launch", *commands, *after],
                         [str(p) for p in program])
        assert core is None or core.exists(), whole
        return self._transcript(whole, commands)

    def open_core(self, program, core, commands):
        whole = run_lldb([WAIT_FOR_PROVIDER, *commands], [str(program[0])], core=core)
        return self._transcript(whole, commands)

    def core_name(self):
        return "program.dmp"


@dataclass
class Lldb19Driver(Driver):
    binary: Path = LLDB19

    def available(self) -> bool:
        return self.binary.exists()

    def _run(self, lines: Sequence[str], commands) -> Transcript:
        script = Path(os.environ.get("TMPDIR", "/tmp")) / f"jit-unwind-lldb19-{os.getpid()}.lldb"
        script.write_text("\n".join([f"command script import {LLDB_INIT}", *lines,
                                     "quit"]) + "\n")
        env = dict(os.environ)
        for name in ("PYTHONHOME", "PYTHONPATH"):
            env.pop(name, None)
        started = time.time()
        try:
            result = subprocess.run([str(self.binary), "--no-lldbinit", "-s", str(script)],
                                    capture_output=True, text=True, errors="replace",
                                    timeout=LLDB19_TIMEOUT, stdin=subprocess.DEVNULL, env=env)
        finally:
            script.unlink(missing_ok=True)
        whole = session_output(result.stdout + result.stderr, started)
        assert_no_python_failure(whole)
        assert "error: module importing failed" not in whole, whole
        pid = re.search(r"Process (\d+) (?:launched|stopped)", whole)
        return Transcript(self.name, list(commands), _split(whole, commands, "(lldb) "),
                          whole, int(pid.group(1)) if pid else None)

    def launch(self, program, commands, env: Mapping[str, str] = {}, core=None, settings=()):
        setup = [*settings, f"file {program[0]}"]
        if len(program) > 1:
            setup.append("settings set -- target.run-args " + " ".join(map(str, program[1:])))
        setup += [f"settings set target.env-vars {k}={v}" for k, v in env.items()]
        # -i /dev/null keeps the program off LLDB's stdin, which holds the commands.
        after = [f"process save-core --style full {core}"] if core else []
        transcript = self._run([*setup, "process launch -i /dev/null", *commands, *after,
                                "process kill"], commands)
        assert core is None or core.exists(), transcript.whole
        return transcript

    def open_core(self, program, core, commands):
        return self._run([f"target create --core {core} {program[0]}", *commands], commands)

    def core_name(self):
        return "program.dmp"


DRIVERS: Dict[str, Driver] = {
    "gdb13": GdbDriver("gdb13", GDB_BINARIES["gdb13"]),
    "gdb18": GdbDriver("gdb18", GDB_BINARIES["gdb18"]),
    "lldb23": Lldb23Driver("lldb23"),
    "lldb19": Lldb19Driver("lldb19"),
}


def driver(name: str) -> Driver:
    found = DRIVERS[name]
    assert found.available(), f"{name} is missing: run `make apt-deps venv`"
    return found
