"""Helpers shared by the tests: where things are, running GDB, reading its backtraces."""

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
GDB_INIT = REPO / "gdb_init.py"

GDB_BINARIES = {
    "gdb13": Path("/usr/bin/gdb"),
    "gdb18": REPO / ".venv" / "bin" / "gdb",
}

GDB_TIMEOUT = 300

# What the plugin's failures look like in a debugger's output, anchored at a line's start:
# a debugger that shows source lines (CPython's sources at the paths its DWARF names)
# prints words such as "error" or "Traceback" from the C code, which are no failure.
_PYTHON_FAILURE = re.compile(r"^(?:Traceback \(most recent call last\):|Python Exception <)",
                             re.M)
_LLDB_ERROR = re.compile(r"^error: .*", re.M)


def assert_no_python_failure(output: str) -> None:
    """No Python traceback and no GDB "Python Exception" in ``output``."""
    assert not _PYTHON_FAILURE.search(output), output


def lldb_errors(output: str) -> List[str]:
    """LLDB's error lines ("error: ..."; the plugin's command errors take that form too)."""
    return _LLDB_ERROR.findall(output)


def fixture_binary(name: str) -> Path:
    path = BUILD / name
    assert path.exists(), f"{path} is missing: build the fixtures with `make fixtures`"
    return path


def pyenv_python(version: str) -> Path:
    """pyenv's CPython ``version`` (e.g. "3.12.1"); fails the test when absent."""
    root = os.environ.get("PYENV_ROOT") or (
        subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                       errors="replace").stdout.strip()
        if shutil.which("pyenv") else str(Path.home() / ".pyenv"))
    minor = ".".join(version.split(".")[:2])
    path = Path(root) / "versions" / version / "bin" / f"python{minor}"
    assert path.exists(), f"pyenv CPython {version} is missing at {path}"
    return path


class SessionOutput(str):
    """What a debugger session printed, and when it ran: ``window`` is (time.time()
    before it started, after it ended), for remove_process_files."""

    window: Tuple[float, float] = (0.0, float("inf"))


def session_output(text: str, started: float) -> SessionOutput:
    """``text``, printed by a session that started at ``started`` and has just ended."""
    output = SessionOutput(text)
    output.window = (started, time.time())
    return output


def run_gdb(gdb: Path, commands: Sequence[str], program: Sequence[str] = (),
            core: Optional[Path] = None, plugin: bool = True,
            before: Sequence[str] = (), early: Sequence[str] = (),
            others_may_fail: bool = False) -> str:
    """Run GDB in batch mode and return everything it printed.  ``early`` commands run
    first of all (``-iex``), before the plugin is loaded.  ``others_may_fail``: another
    extension's Python errors (a run without the plugin), or its output holding
    "Traceback" (CPython's py-bt), are what the test looks at."""
    argv = [str(gdb), "-nx", "-q", "-batch",
            "-iex", "set debuginfod enabled off", "-iex", "set pagination off",
            "-iex", "set width 0", "-iex", "set confirm off",
            # gdb-for-pwndbg's wrapper sets these for its own Python; a CPython under
            # test must not inherit them.
            "-iex", "unset environment PYTHONHOME", "-iex", "unset environment PYTHONPATH",
            "-iex", "unset environment PYTHONNOUSERSITE"]
    for command in early:
        argv += ["-iex", command]
    if plugin:
        argv += ["-x", str(GDB_INIT)]
    for command in before:
        argv += ["-ex", command]
    for command in commands:
        argv += ["-ex", command]
    if core is not None:
        argv += [str(program[0]), str(core)]
    elif program:
        argv += ["--args", *map(str, program)]
    started = time.time()
    result = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                            timeout=GDB_TIMEOUT, stdin=subprocess.DEVNULL)
    output = session_output(result.stdout + result.stderr, started)
    if not others_may_fail:
        assert_no_python_failure(output)
    return output


@dataclass
class BtFrame:
    level: int
    function: str
    line: str


_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*?) \(")
# Names jit-unwind gives ("[jit] f (app.py:3) trace 0x...", "[jit 0x...+0x10] [via ...]")
# hold spaces and parentheses; such frames have no arguments, so the name runs to " ()".
_JIT_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\[.*?) \(\)$")


def parse_backtrace(output: str) -> List[BtFrame]:
    """Frames of the last ``bt`` in ``output`` (a new #0 starts a new backtrace)."""
    frames: List[BtFrame] = []
    for line in output.splitlines():
        match = _JIT_FRAME.match(line) or _FRAME.match(line)
        if match is None:
            continue
        level = int(match.group(1))
        if level == 0:
            frames = []
        frames.append(BtFrame(level, match.group(2), line))
    return frames


def assert_no_unnamed_frames(frames: List[BtFrame]) -> None:
    unnamed = [f.line for f in frames if f.function.startswith("??")]
    assert not unnamed, "frames without a name:\n" + "\n".join(unnamed)


# A GDB command that prints the inferior's pid, for remove_perf_map().
PRINT_PID = 'python print("inferior-pid", gdb.selected_inferior().pid)'


def remove_perf_map(output: str) -> None:
    """Delete the perf map of the process whose pid PRINT_PID printed in ``output``."""
    remove_process_files(re.findall(r"inferior-pid (\d+)", output), output, ("perf-{}.map",))


def remove_launched(output: str) -> None:
    """Delete the perf map of each process LLDB says it launched (or stopped) in
    ``output``."""
    remove_process_files(re.findall(r"Process (\d+) (?:launched|stopped)", output), output,
                         ("perf-{}.map",))


PROCESS_FILES = ("perf-{}.map", "jit-{}.dump")


def remove_process_files(pids: Iterable, output: Optional[str] = None,
                         names: Sequence[str] = PROCESS_FILES) -> None:
    """Delete the files in /tmp named ``names`` (formatted with the pid) of the
    processes ``pids`` that ran in the session that printed ``output``: only those last
    written while that session ran (its SessionOutput.window), when it says.  pid_max is
    32,768 here and the tests run in parallel, so by the time of a clean-up a pid may
    be another test's process, whose files that test still needs (a node test reads its
    perf map again on its core); a plain string, as before, deletes them whatever their
    age."""
    low, high = getattr(output, "window", SessionOutput.window)
    for pid in set(map(str, pids)):
        for name in names:
            path = os.path.join("/tmp", name.format(pid))
            try:
                if low <= os.stat(path).st_mtime <= high:
                    os.unlink(path)
            except OSError:
                pass
