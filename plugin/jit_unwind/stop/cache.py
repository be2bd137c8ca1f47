"""The per-stop cache of one process, owned by the core: the region map, named regions,
the CPython runtime and its executors, symbol lookups, Python threads, and what the
unwinder found.  Adapters call :meth:`StopCache.invalidate` from their debugger's events
(continue, new object file, exit, memory written, inferior call); nothing else clears it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Set, Tuple

from ..file_cache import FILE_ERRORS
from ..regions.core_notes import say_once
from ..target import JitUnwindError
from ..elf.lookup import section_address, symbol_address
from ..model import Unwound
from ..regions import RegionMap
from ..regions.discovery import build_region_map, jit_interface_regions
from ..regions.perfmap import read_perf_map
from ..regions.process_root import pid_inside, process_root

# The CPython model is imported when a Python process is first looked at, the jitdump
# reader when a pc is first in JIT code: most programs need neither, and loading the
# plugin should cost little (bench/load_and_step.py).
if TYPE_CHECKING:
    from ..cpython import CPythonRuntime, PyThread
    from ..regions.jitdump_process import ProcessJitdump


# What reading a stop's memory and files raises when they are unreadable, cut short or
# corrupt: a stop's readers catch these and say so, and let a bug through.
READ_ERRORS = (JitUnwindError, *FILE_ERRORS)


def _may_have_jitdump(pid: Optional[int], mappings) -> bool:
    from ..regions.jitdump_paths import may_have_jitdump  # not the reader: most never need it
    return pid is not None and may_have_jitdump(pid, (m.path for m in mappings))


def _maps_python_file(mappings) -> bool:
    """A mapped file is named like CPython (python3.12, libpython3.12.so)."""
    return any("python" in os.path.basename(m.path) for m in mappings)


class StopCache:
    """Everything worth computing once per stop for ``process`` (a debugger.Process)."""

    def __init__(self, process, on_first_jit=None) -> None:
        self.process = process
        process.cache = self  # declared on the interface (debugger.Process.cache)
        # Called once, at the first region map with JIT code (the adapter's preparation
        # for walks through it); never again.
        self._on_first_jit = on_first_jit
        self._regions: Optional[RegionMap] = None
        # None until regions() has run this stop; the unwinder's fast path reads it.
        self.has_jit: Optional[bool] = None
        self._key: Optional[Tuple] = None
        self.problem = ""
        # (pc, sp) of a frame we unwound -> how; caller pc -> caller sp -> the guess.
        self.unwound: Dict[Tuple[int, int], Unwound] = {}
        self.unwound_pcs: Set[int] = set()  # lets the frame filter skip reading sp elsewhere
        self.guessed: Dict[int, Dict[int, Unwound]] = {}
        # (pc, sp) of a frame the debugger could not unwind -> its error: GDB says it
        # once, then only "no reason" for that frame, and bt and py-mixed-bt both show it.
        self.debugger_stops: Dict[Tuple[int, Optional[int]], str] = {}
        self._named = False
        self._memo: Dict[object, Any] = {}
        # The last region map before the process ran again: see known_native().
        self._before_resume: Optional[RegionMap] = None
        # (the mappings it was asked for, is_python_process()'s answer)
        self._python_for: Optional[Tuple[object, bool]] = None

    def invalidate(self, *_args) -> None:
        self._regions = None
        self._before_resume = None
        self.has_jit = None
        self._named = False
        self.forget_unwinding()
        self._memo.clear()

    def forget_unwinding(self) -> None:
        """Drop what this stop's unwinding found (frames unwound, the walks an adapter
        built from its debugger's frames) and keep the regions: the debugger's own
        frames changed (LLDB builds them again when a module comes or goes)."""
        self.unwound.clear()
        self.unwound_pcs.clear()
        self.guessed.clear()
        self.debugger_stops.clear()
        for key in [key for key in self._memo if type(key) is tuple and key[0] == "adapter"]:
            del self._memo[key]

    def resumed(self, *_args) -> None:
        """The process runs again (continue, step, stepi): drop everything, as
        :meth:`invalidate`, but keep the last region map for :meth:`known_native`."""
        previous = self._regions or self._before_resume
        self.invalidate()
        self._before_resume = previous

    def known_native(self, pc: int) -> bool:
        """True when ``pc`` was in a file's code (a program's or library's, not JIT
        code) before the process last ran, and no region map was built since: the
        unwinder's answer for native frames right after a step, without reading the
        mappings again (reading them was most of a ``stepi``'s cost).  A file's code
        stays until the file is unloaded, which the adapters' object-file events
        report (they call :meth:`invalidate`, which forgets the old map)."""
        previous = self._before_resume
        return previous is not None and self._regions is None and previous.in_file_code(pc)

    def nothing_to_name(self) -> bool:
        """True when, as far as can be known without reading the mappings, no runtime
        names JIT code at this stop: the process ran since the last map was built (an
        object file coming or going would have forgotten it), there is no perf map and
        no jitdump, and the mapped files hold no CPython.  A stop (a ``stepi``) that needs
        names only can then leave the map unbuilt: reading /proc/PID/maps is most of its
        cost."""
        previous = self._before_resume
        if previous is None or self._regions is not None:
            return False
        pid = self.process.pid()
        if pid is None or read_perf_map(pid):
            return False
        mappings = previous.mappings
        if _may_have_jitdump(pid, mappings):
            return False
        known = self._python_for
        if known is None or known[0] is not mappings:
            # Only files named like CPython can be one (see is_python_process); an
            # answer of "maybe" is not kept.
            if _maps_python_file(mappings):
                return False
            known = self._python_for = (mappings, False)
        return not known[1]

    def check_process(self) -> None:
        """Drop everything when another inferior or process is selected."""
        key = self.process.key()
        if key != self._key:
            self.invalidate()
            self._key = key

    # Regions --------------------------------------------------------------------------

    def regions(self) -> RegionMap:
        """The region map of this stop; cheap after the first call (the unwinder asks
        for every frame)."""
        if self._regions is None:
            self.check_process()
            self._regions, self.problem = build_region_map(self.process)
            self.has_jit = self._regions.has_jit()
            self._before_resume = None
            self._say_about_core()
            if self.has_jit and self._on_first_jit is not None:
                prepare, self._on_first_jit = self._on_first_jit, None
                prepare()
        return self._regions

    def _say_about_core(self) -> None:
        """The first look at a core file: say if it is truncated or lacks its executable."""
        try:
            if self.process.connection() == "core":
                say_once(self.process)
        except READ_ERRORS:  # a warning is a bonus
            pass

    def named_regions(self) -> RegionMap:
        """The region map with the named JIT regions of runtimes added (the JIT
        interface's entries, CPython's executors): read only once a pc is JIT code."""
        regions = self.regions()
        if not self._named:
            self._named = True
            for loader in (lambda: jit_interface_regions(self.process, regions.mappings),
                           self.jit_code_regions):
                try:
                    regions.add_symbols(loader())
                except READ_ERRORS as error:  # a runtime we cannot read: names only
                    self.problem = f"cannot read JIT regions: {error}"
            try:
                if self._jitdump_file_exists():  # else its reader is not even imported
                    dump = self.jitdump()
                    regions.add_symbols(dump.regions())
                    regions.add_unwind_records(dump.unwind_records())
            except READ_ERRORS as error:  # a dump we cannot read: no names from it
                self.problem = f"cannot read the jitdump: {error}"
        return regions

    def _jitdump_file_exists(self) -> bool:
        from ..regions import jitdump
        kind = self.process.connection()
        root, pid = process_root(self.process, kind)  # the pid the process knows
        if pid is None:
            return False
        cwd = f"/proc/{self.process.pid()}/cwd" if root and kind == "native" else \
            jitdump.working_directory(self.process, kind)
        return jitdump.file_exists(pid, [m.path for m in self.regions().mappings], cwd)

    def jitdump(self) -> "ProcessJitdump":
        """The process's perf jitdump (names, code, unwind tables of its JIT code),
        its records checked against memory; empty without one."""
        from ..regions.jitdump_process import process_jitdump
        return self._cached("jitdump", lambda: process_jitdump(
            self.process, list(self.regions().mappings), self.process.connection(),
            lambda name: self.lookup_symbol(name, debug_info=False)))

    def record(self, pc: int, sp: int, unwound: Unwound) -> None:
        """What the unwinder found for the frame at (pc, sp)."""
        self.unwound[(pc, sp)] = unwound
        self.unwound_pcs.add(pc)
        if unwound.guess and unwound.caller_pc is not None and unwound.caller_sp is not None:
            self.guessed.setdefault(unwound.caller_pc, {})[unwound.caller_sp] = unwound

    def unwound_at(self, pc: int, sp_of) -> Optional[Unwound]:
        """What the unwinder found for the frame at ``pc`` (``sp_of()`` its sp, read
        only when the unwinder saw that pc at all)."""
        return self.unwound.get((pc, sp_of())) if pc in self.unwound_pcs else None

    def _cached(self, key, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def per_stop(self, key, compute):
        """``compute()``, once per stop: for what an adapter computes once per stop (a
        thread's walk through JIT code that its debugger's frames are built from)."""
        self.check_process()
        return self._cached(("adapter", key), compute)

    def known(self, key):
        """What :meth:`per_stop` computed for ``key`` this stop, else None."""
        self.check_process()
        return self._memo.get(("adapter", key))

    # Symbols --------------------------------------------------------------------------

    def lookup_symbol(self, name: str, debug_info: bool = True) -> Optional[int]:
        """Address of a global of the process: the mapped files' symbol tables, else (for
        ``_PyRuntime`` of a stripped interpreter) its ``.PyRuntime`` section, else the
        debugger's debug info (separate debug files; slow for a name the program lacks,
        as GDB then searches all of it, so ``debug_info=False`` skips it).  Never
        evaluates an expression: this runs inside the unwinder too, where evaluating may
        need the frame being unwound."""
        return self._cached(("symbol", name, debug_info),
                            lambda: self._lookup_symbol(name, debug_info))

    def _lookup_symbol(self, name: str, debug_info: bool) -> Optional[int]:
        mappings = self.regions().mappings
        address = None
        if name == "_PyRuntime":
            # CPython 3.12+ places _PyRuntime alone in its .PyRuntime section: read from
            # the section headers, cheaper than a symbol look-up through pyelftools.
            address = section_address(mappings, ".PyRuntime")
        if address is None:
            address = symbol_address(mappings, name)
        if address is None and debug_info:
            address = self.process.symbol_address(name)
            if address is None:  # no debug info either: the symbol tables, parsed in full
                address = symbol_address(mappings, name, full_tables=True)
        return address

    # CPython --------------------------------------------------------------------------

    def python_runtime(self) -> Tuple[Optional[CPythonRuntime], str]:
        """The runtime, or None and a one-line reason."""
        self.check_process()
        return self._cached("python-runtime", self._python_runtime)

    def _python_runtime(self):
        from ..cpython import CPythonError, find_runtime
        if self.process.pid() is None:
            return None, "no process: run a program or load a core file first"
        try:
            return find_runtime(self.process.memory, self.lookup_symbol,
                                self._version_hint()), ""
        except CPythonError as error:
            return None, str(error)
        except READ_ERRORS as error:  # never let unreadable memory break a backtrace
            return None, f"cannot read the CPython runtime: {error}"

    def _version_hint(self):
        """major.minor from the interpreter's file names (libpython3.10.so, python3.10):
        lets the error for CPython 3.10 and older name the version."""
        from ..cpython import version_from_library_name
        for path in self.process.module_paths():
            version = version_from_library_name(path)
            if version is not None:
                return version
        return None

    def is_python_process(self) -> bool:
        """Cheap test used on every backtrace: does the program have a CPython runtime?"""
        self.check_process()
        # Only files named like CPython (python3.12, libpython3.12.so) are opened: this
        # runs at the first bt of every program, and most programs are not Python.
        # CPython exports _PyRuntime (or keeps its .PyRuntime section) in every build.
        # The answer depends on the mapped files only: it is kept while the mappings
        # are the same object (regions/discovery.py reuses unchanged ones), so a step
        # does not ask again.
        mappings = self.regions().mappings
        known = self._python_for
        if known is not None and known[0] is mappings:
            return known[1]
        answer = self._cached("has-python", lambda: (
            _maps_python_file(mappings)
            and self.lookup_symbol("_PyRuntime", debug_info=False) is not None))
        self._python_for = (mappings, answer)
        return answer

    def may_name_jit_code(self) -> bool:
        """Whether a runtime may name this stop's JIT code (what a symbol file is made
        of): a perf map, a jitdump, or CPython's executors; the JIT interface's entries
        are the debugger's own.  Cheap: spares other JIT processes (a JavaScript engine
        run without perf flags) the runtime lookups at every stop."""
        regions = self.regions()
        if len(regions.symbols):
            return True
        if not regions.has_jit():
            return False
        return (self.is_python_process()
                or _may_have_jitdump(self.process.pid(), regions.mappings))

    def has_jit_or_python(self) -> bool:
        """Whether frames are worth decorating: the process has JIT code or a CPython
        runtime (a debugger prints undecorated frames faster)."""
        return self.regions().has_jit() or self.is_python_process()

    def may_run_python(self) -> bool:
        """Whether a CPython runtime may be found: a mapped file named like CPython,
        or one exporting ``_PyRuntime`` or holding its ``.PyRuntime`` section (3.12+);
        else whether the runtime was found (py-mixed-bt looks through the debugger's
        symbols too).  Spares the ``bt`` of a JIT process that runs no Python (node,
        HotSpot, LuaJIT) the runtime's look-ups through the debugger's symbols and the
        files' full symbol tables: ~15-20 ms at its first stop."""
        known = self._memo.get("python-runtime")
        if known is not None:
            return known[0] is not None
        return self._cached("may-run-python", lambda: (
            _maps_python_file(self.regions().mappings)
            or self.lookup_symbol("_PyRuntime", debug_info=False) is not None))

    def python_thread(self, native_id: int) -> Optional[PyThread]:
        """The Python thread state running on the kernel thread ``native_id``."""
        if not self.may_run_python():
            return None
        runtime, _reason = self.python_runtime()
        if runtime is None:
            return None
        return self._cached(("python-thread", native_id),
                            lambda: runtime.thread_by_native_id(self._id_inside(native_id)))

    def _id_inside(self, native_id: int) -> int:
        """The id the thread ``native_id`` has in the process's own pid namespace (a
        container's): the one CPython keeps in its thread states."""
        pid = self.process.pid()
        if pid is None or self.process.connection() != "native" or pid_inside(pid) == pid:
            return native_id
        return pid_inside(native_id, f"/proc/{pid}/task/{native_id}")

    def jit_code_regions(self):
        """Named regions of the runtime's JIT code (CPython's executors)."""
        return self._cached("runtime-jit-regions", self._jit_code_regions)

    def _jit_code_regions(self):
        if not self.may_run_python():  # 3.13+ keeps _PyRuntime in .PyRuntime
            return []
        from ..cpython import CPythonError
        from ..cpython.executors import read_executors
        from ..regions.cpython_jit import executor_regions
        runtime, _reason = self.python_runtime()
        if runtime is None or runtime.version.minor_version < (3, 13):
            return []
        try:
            executors = read_executors(self.process.memory, runtime,
                                       self._dwarf_executor_layout(runtime), self.lookup_symbol)
            return executor_regions(executors)
        except CPythonError:
            return []

    def _dwarf_executor_layout(self, runtime):
        """Executor offsets from the interpreter's DWARF when it has them, else None (the
        built-in table for the version is used)."""
        from ..cpython.executors import DWARF_FIELDS
        if self.process.member_offset("_PyExecutorObject", "jit_code") is None:
            return None  # no DWARF: the built-in table
        # Members a version lacks (3.15: executor_list_head, jit_side_entry; 3.13/3.14:
        # the executor array) keep the table's value.
        offsets = {}
        for field, (type_name, member) in DWARF_FIELDS.items():
            offset = self.process.member_offset(type_name, member)
            if offset is not None:
                offsets[field] = offset
        return _with(runtime, offsets) if offsets else None


def _with(runtime, offsets):
    from ..cpython import CPythonError
    from ..cpython.executors import executor_layout
    try:
        return executor_layout(runtime.version).with_offsets("DWARF", **offsets)
    except CPythonError:
        return None


class StopCaches:
    """One StopCache per process, for a debugger that hands out several processes (LLDB:
    one per target); ``key`` identifies the process for its whole life, and each cache
    drops its contents when its process's :meth:`~debugger.Process.key` changes."""

    MAX_PROCESSES = 16

    def __init__(self) -> None:
        self._caches: Dict[object, StopCache] = {}

    def get(self, key, make_process) -> StopCache:
        """The cache of the process ``key``; ``make_process()`` wraps it the first time."""
        cache = self._caches.get(key)
        if cache is None:
            if len(self._caches) >= self.MAX_PROCESSES:  # processes long gone
                self._caches.clear()
            cache = self._caches[key] = StopCache(make_process())
        return cache

    def invalidate(self) -> None:
        """Forget every process's stop (a setting changed what a stop finds)."""
        for cache in self._caches.values():
            cache.invalidate()
