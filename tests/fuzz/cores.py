"""Real core files to fuzz: written by GDB's ``gcore`` from real stopped programs.

The toy JIT in its three modes (with and without ``--perf-map``), CPython 3.12 with
``-X perf`` (pyenv), CPython 3.13, 3.14 and 3.15 with their JIT, a free-threaded 3.14t
with ``-X perf`` running four threads, LuaJIT 2.1 and Ruby 3.1 with YJIT.  Each core is
made once per directory; the perf map of its dead process is kept next to it (as
``perf.map``) and put back in /tmp under the core's pid while the fuzzer runs, since the
core names no trampolines itself.
"""

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

from tests.jit_python import fixture_python, jit_python
from tests.python_expect import RECURSE, SCRIPTS
from tests.support import GDB_BINARIES, PRINT_PID, fixture_binary, pyenv_python, run_gdb


@dataclass(frozen=True)
class Recipe:
    program: Callable[[], Path]
    args: Tuple[str, ...]
    before: Tuple[str, ...] = ()
    python: bool = False
    # Globals the test debugger finds "from debug info" (GDB would, from DWARF).
    debug_symbols: Tuple[str, ...] = ()


def _toyjit() -> Path:
    return fixture_binary("toyjit")


RUNTIMES = Path(__file__).resolve().parent.parent / "fixtures" / "runtimes"


def _runtime(name: str) -> Path:
    found = shutil.which(name)
    assert found, f"{name} is missing: run `make apt-deps`"
    return Path(found)


RECIPES: Dict[str, Recipe] = {
    "toy-fp": Recipe(_toyjit, ("fp", "3", "sigtrap", "--perf-map")),
    "toy-frameless": Recipe(_toyjit, ("frameless", "3", "sigtrap", "--perf-map")),
    "toy-mixed": Recipe(_toyjit, ("mixed", "3", "sigtrap", "--perf-map")),
    "toy-mixed-nomap": Recipe(_toyjit, ("mixed", "3", "sigtrap")),
    "toy-gdb-jit": Recipe(_toyjit, ("mixed", "3", "sigtrap", "--gdb-jit"),
                          debug_symbols=("__jit_debug_descriptor",)),
    "py3.12-perf": Recipe(lambda: pyenv_python("3.12.1"), ("-X", "perf", str(RECURSE)),
                          python=True),
    "py3.12-threads": Recipe(lambda: pyenv_python("3.12.1"),
                             ("-X", "perf", str(SCRIPTS / "three_threads.py")), python=True),
    "py3.14t-threads": Recipe(lambda: fixture_python("3.14t"),
                              ("-X", "perf", str(SCRIPTS / "three_threads.py")),
                              python=True),
    "py3.13-jit": Recipe(lambda: jit_python("3.13"),
                         (str(SCRIPTS / "jit_scenarios.py"), "kill"),
                         ("set environment PYTHON_JIT=1",), python=True),
    "py3.14-jit": Recipe(lambda: jit_python("3.14"),
                         (str(SCRIPTS / "jit_scenarios.py"), "kill"),
                         ("set environment PYTHON_JIT=1",), python=True),
    # 3.15's JIT registers each executor through GDB's JIT interface.
    "py3.15-jit": Recipe(lambda: jit_python("3.15-jit"),
                         (str(SCRIPTS / "jit_scenarios.py"), "kill"),
                         ("set environment PYTHON_JIT=1",), python=True,
                         debug_symbols=("__jit_debug_descriptor",)),
    # JIT runtimes of tests/e2e/test_jit_runtimes.py whose walk reaches main today,
    # stopped in native code called from a LuaJIT trace and from YJIT code (no perf map).
    "luajit": Recipe(lambda: _runtime("luajit"), (str(RUNTIMES / "hot_ffi.lua"),)),
    "ruby-yjit": Recipe(lambda: _runtime("ruby"), ("--yjit", str(RUNTIMES / "hot_cfunc.rb"))),
}


@dataclass
class RecordedCore:
    name: str
    program: Path
    core: Path
    pid: int
    python: bool
    perf_map: Path  # the saved copy, or a path that does not exist
    debug_symbols: Tuple[str, ...] = ()

    def install_perf_map(self) -> None:
        """Put the saved perf map back where the core's process wrote it."""
        if self.perf_map.exists():
            shutil.copyfile(self.perf_map, f"/tmp/perf-{self.pid}.map")

    def remove_perf_map(self) -> None:
        try:
            os.unlink(f"/tmp/perf-{self.pid}.map")
        except OSError:
            pass


def record_core(name: str, directory: Path) -> RecordedCore:
    """The core of recipe ``name`` in ``directory`` (made by GDB 13 if missing)."""
    recipe = RECIPES[name]
    program = recipe.program()
    core = directory / f"{name}.core"
    saved_map = directory / f"{name}.perf.map"
    pid_file = directory / f"{name}.pid"
    if not core.exists() or not pid_file.exists():
        directory.mkdir(parents=True, exist_ok=True)
        output = run_gdb(GDB_BINARIES["gdb13"], [*recipe.before, "run", PRINT_PID,
                                                 f"gcore {core}"], [program, *recipe.args],
                         plugin=False)
        pid = int(re.search(r"inferior-pid (\d+)", output).group(1))
        assert core.exists(), output
        perf_map = Path(f"/tmp/perf-{pid}.map")
        if perf_map.exists():
            shutil.copyfile(perf_map, saved_map)
            perf_map.unlink()
        pid_file.write_text(str(pid))
    pid = int(pid_file.read_text())
    return RecordedCore(name, program, core, pid, recipe.python, saved_map,
                        recipe.debug_symbols)


def record_cores(names: Sequence[str], directory: Path) -> List[RecordedCore]:
    return [record_core(name, directory) for name in names]
