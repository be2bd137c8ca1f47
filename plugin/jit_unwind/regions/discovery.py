"""Build the RegionMap of a process: which mappings to believe (live process, core file
or remote target) and which named regions to add (perf map, GDB's JIT interface)."""

from __future__ import annotations  # annotations unevaluated: less work at load

from typing import List, Tuple

from ..dependencies import WITHOUT_PYELFTOOLS, missing, warn_missing
from ..elf.lookup import symbol_address
from ..elf.pyelftools_errors import pyelftools_errors
from ..model import Mapping, Region, RegionSource
from . import RegionMap
from .corefile import read_core_mappings
from .jit_interface import read_jit_interface
from .perfmap import perf_map_path, read_perf_map, stale_perf_map
from .process_root import process_root
from .procmaps import read_proc_maps


# Connections that are a dump of a process: "core" (an ELF core file, whose load
# segments are read here) and "minidump" (whose mappings the debugger lists).
CORE_KINDS = ("core", "minidump")


def _mappings(process, kind: str) -> Tuple[List[Mapping], List[int], str]:
    """Mappings, starts of anonymous executable mappings that are not JIT code, and a
    problem description ("" when fine)."""
    if kind == "core":
        path = process.core_file()
        if not path:
            return [], [], "cannot tell which core file is loaded"
        try:
            mappings, not_jit = read_core_mappings(path, process.sysroot(),
                                                   process.executable_path())
        except ImportError:
            warn_missing(process, "pyelftools", WITHOUT_PYELFTOOLS)
            return [], [], missing("pyelftools", WITHOUT_PYELFTOOLS, process.debugger_name)
        except pyelftools_errors() as error:  # a truncated or foreign core (OSError too)
            return [], [], f"cannot read core file {path}: {error}"
        return mappings, not_jit, ""
    if kind == "native":  # /proc of a local process: more than the debugger lists
        return read_proc_maps(process.pid()), [], ""
    # A remote process, or a core the debugger lists the mappings of (a minidump carries
    # the process's /proc/PID/maps).
    return process.debugger_mappings(), [], ""


def build_region_map(process) -> Tuple[RegionMap, str]:
    """The process's region map and a problem description ("" when fine)."""
    pid = process.pid()
    if pid is None:
        return RegionMap(), "no process"
    kind = process.connection()
    mappings, not_jit, problem = _mappings(process, kind)
    root, pid_inside = process_root(process, kind)
    perf_map = read_perf_map(pid_inside or pid, root)
    if perf_map and kind in ("core", "native"):  # /proc and /tmp are this machine's
        stale = stale_perf_map(pid, process.core_file() if kind == "core" else None,
                               perf_map_path(pid_inside or pid, root))
        if stale:
            perf_map = []
            problem = f"{problem}; {stale}" if problem else stale
    source = RegionSource.CORE if kind in CORE_KINDS else RegionSource.MAPS
    # The same mappings and perf map as the last map built (the same lists: the readers
    # hand out their last result while the source is unchanged): its regions again.
    key = (pid, source, tuple(not_jit))
    last_key, last_mappings, last_perf_map, template = _last_built
    if (template is not None and last_key == key and _same(last_mappings, mappings)
            and _same(last_perf_map, perf_map)):
        return template.fresh(), problem
    template = RegionMap(mappings, perf_map, (), not_jit, source=source)
    _last_built[:] = [key, mappings, perf_map, template]
    return template.fresh(), problem


# What the last map was built from, and that map (never handed out itself: fresh()).
_last_built: list = [None, None, None, None]


def _same(before, now) -> bool:
    return before is now or (not before and not now)


def jit_interface_regions(process, mappings) -> List[Region]:
    """Object files registered through GDB's JIT interface (listed, left to GDB)."""
    # Where GDB's own JIT interface looks, its minimal symbols: exported, else (an
    # executable without -rdynamic) in a .symtab or a stripped file's debug file's (those
    # the debugger read, when it says), read once and kept on disk.  Never the debugger's
    # debug info: GDB's search of it for a name the program lacks cost ~25 ms of the
    # first bt (LuaJIT, libc's debug file loaded), and a descriptor GDB cannot find
    # registers nothing for it either.
    descriptor = symbol_address(mappings, "__jit_debug_descriptor", full_tables=True,
                                debug_files=process.separate_debug_files())
    if descriptor is None:
        return []
    try:
        return read_jit_interface(process.memory, descriptor)
    except ImportError:  # entries registered, and no pyelftools to read them with
        warn_missing(process, "pyelftools", WITHOUT_PYELFTOOLS)
        return []
