"""Real core files to fuzz: written by GDB's ``gcore`` from real stopped programs.

The toy JIT in its three modes (with and without ``--perf-map``), CPython 3.12 with
``-X perf`` (pyenv), CPython 3.13, 3.14 and 3.15 with their JIT, a free-threaded 3.14t
with ``-X perf`` running four threads, LuaJIT 2.1, Ruby 3.1 with YJIT, gjs (SpiderMonkey),
HotSpot (OpenJDK 17) and node 20 (V8).  Each core is made once per directory; the perf
map of its dead process is kept next to it (as ``perf.map``) and put back in /tmp under
the core's pid while the fuzzer runs, since the core names no trampolines itself.
"""

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from jit_unwind.file_cache import Identity, file_identity
from tests.jit_python import fixture_python, jit_python
from tests.python_expect import RECURSE, SCRIPTS
from tests.support import BUILD, GDB_BINARIES, PRINT_PID, fixture_binary, pyenv_python, run_gdb


@dataclass(frozen=True)
class Recipe:
    program: Callable[[], Path]
    args: Tuple[str, ...]
    before: Tuple[str, ...] = ()
    python: bool = False
    # Globals the test debugger finds "from debug info" (GDB would, from DWARF).
    debug_symbols: Tuple[str, ...] = ()
    # The GDB that writes the core: GDB 13 writes PROT_NONE reservations as zeros
    # (SpiderMonkey's 2 GiB for JIT code, HotSpot's heap and code cache, V8's cage:
    # cores of 0.8-2.2 GB), GDB 18 leaves them out.
    gdb: str = "gdb13"
    # Where the test debugger's intact walk ends: MAIN (naturally, at main or _start),
    # OUTERMOST (naturally, at a thread's first function), else with this reason.
    end: str = "main"
    # In the test suite's short run (tests/fuzz/conftest.py), or in `make fuzz` only.
    suite: bool = True


def _toyjit() -> Path:
    return fixture_binary("toyjit")


RUNTIMES = Path(__file__).resolve().parent.parent / "fixtures" / "runtimes"


def _java() -> Path:
    fixture_binary("runtimes/Hot.class")
    return _runtime("java")


def _runtime(name: str) -> Path:
    found = shutil.which(name)
    assert found, f"{name} is missing: run `make apt-deps`"
    return Path(found)


HOT = BUILD / "runtimes"  # Hot.class, built by `make fixtures`
MAIN, OUTERMOST = "main", "outermost"
GJS_STOP = ("set breakpoint pending on", "break sin", "ignore 1 50")
# Java: a small heap, no class-data archive and one GC thread keep the core small.
JAVA_OPTIONS = ("-Xbatch", "-Xmx16m", "-Xshare:off", "-XX:+UseSerialGC",
                "-XX:ReservedCodeCacheSize=32m")
# Hot.java sleeps on every 1024th call; its perf map is written at call 30000.
JAVA_STOP = ("set breakpoint pending on", "handle SIGSEGV nostop noprint pass",
             "break JVM_Sleep", f"ignore 1 {30000 // 1024}")
NODE_FLAGS = ("--perf-basic-prof", "--logfile=/dev/null")


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
    # gjs (SpiderMonkey) stopped in libm's sin called from Ion code, and under 14 JIT
    # frames of a recursion (tests/e2e/test_jit_runtimes.py's ignore counts).  gjs is
    # stripped, its main and _start unnamed: the walk goes through EnterJIT's entry
    # record to _start, which has no name here.
    "gjs": Recipe(lambda: _runtime("gjs"), (str(RUNTIMES / "hot_sin.js"),), GJS_STOP,
                  gdb="gdb18", end=OUTERMOST, suite=False),
    "gjs-recursion": Recipe(lambda: _runtime("gjs"), (str(RUNTIMES / "recursive_sin.js"),),
                            GJS_STOP, gdb="gdb18", end=OUTERMOST),
    # HotSpot (OpenJDK 17): C2 code calling Thread.sleep, stopped in JVM_Sleep, without
    # and with a perf map (and frame pointers); the Java thread's walk ends at clone3.
    "hotspot": Recipe(_java, (*JAVA_OPTIONS, "-cp", str(HOT), "Hot"), JAVA_STOP,
                      gdb="gdb18", end=OUTERMOST),
    "hotspot-perfmap": Recipe(_java, (*JAVA_OPTIONS, "-XX:+PreserveFramePointer", "-cp",
                                      str(HOT), "Hot", "perfmap"), JAVA_STOP,
                              gdb="gdb18", end=OUTERMOST, suite=False),
    # node 20 (V8) with its perf map: optimized code calling kill() through V8's
    # remapped builtins, and after a deoptimization (return addresses the deoptimizer
    # planted into node's builtins, code without CFI).
    "node": Recipe(lambda: _runtime("node"), (*NODE_FLAGS, str(RUNTIMES / "node_hot.js")),
                   gdb="gdb18", suite=False),
    "node-deopt": Recipe(lambda: _runtime("node"),
                         (*NODE_FLAGS, str(RUNTIMES / "node_deopt.js")), gdb="gdb18"),
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

    def install_perf_map(self) -> Optional[Identity]:
        """Put the saved perf map back where the core's process wrote it; the identity
        of the file put there (for remove_perf_map), None when there is no saved map."""
        if not self.perf_map.exists():
            return None
        path = f"/tmp/perf-{self.pid}.map"
        shutil.copyfile(self.perf_map, path)
        return file_identity(path)

    def remove_perf_map(self, installed: Optional[Identity]) -> None:
        """Remove the map install_perf_map put there, unless it has been replaced since:
        the pid may be a live test's process by now, which writes its own map there."""
        path = f"/tmp/perf-{self.pid}.map"
        if installed is not None and file_identity(path) == installed:
            try:
                os.unlink(path)
            except OSError:
                pass


def record_core(name: str, directory: Path) -> RecordedCore:
    """The core of recipe ``name`` in ``directory`` (made by its GDB if missing)."""
    recipe = RECIPES[name]
    program = recipe.program()
    core = directory / f"{name}.core"
    saved_map = directory / f"{name}.perf.map"
    pid_file = directory / f"{name}.pid"
    if not core.exists() or not pid_file.exists():
        directory.mkdir(parents=True, exist_ok=True)
        output = run_gdb(GDB_BINARIES[recipe.gdb], [*recipe.before, "run", PRINT_PID,
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
