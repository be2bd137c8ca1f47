"""Per-stop region maps of LLDB processes, keyed by process and stop id.

LLDB rebuilds frame providers at every stop (the dynamic loader's internal stops
included); a process's map is read once per stop id and reused by every thread and by
the commands.
"""

import os
from typing import Dict, List, Optional, Tuple

import lldb

from ..regions import Mapping, RegionMap
from ..regions.corefile import read_core_mappings
from ..regions.perfmap import read_perf_map
from ..regions.procmaps import read_proc_maps

# (process unique id, pid) -> (stop id, region map, problem)
_maps: Dict[Tuple[int, int], Tuple[int, RegionMap, str]] = {}
# Mappings of core files by path, size and mtime: a core does not change.
_cores: Dict[Tuple[str, int, float], Tuple[list, Optional[int]]] = {}


def core_file_path(process: "lldb.SBProcess") -> Optional[str]:
    """The core file an LLDB process was loaded from, None for a live process."""
    if process.GetPluginName() != "elf-core":
        return None
    spec = process.GetCoreFile()
    if spec is None or not spec.IsValid():
        return None
    return spec.fullpath


def _core_mappings(path: str):
    stat = os.stat(path)
    key = (path, stat.st_size, stat.st_mtime)
    if key not in _cores:
        _cores.clear()
        _cores[key] = read_core_mappings(path)
    return _cores[key]


def build_region_map(process: "lldb.SBProcess") -> Tuple[RegionMap, str]:
    pid = process.GetProcessID()
    if not process.IsValid() or pid <= 0:
        return RegionMap(), "no process"
    core = core_file_path(process)
    if core is not None:
        try:
            mappings, vdso = _core_mappings(core)
        except ImportError:
            return RegionMap(source="core"), (
                "pyelftools is missing from LLDB's Python: without it jit-unwind finds "
                "no JIT code in core files (pip install pyelftools)")
        except Exception as error:  # a truncated or foreign core
            return RegionMap(source="core"), f"cannot read core file {core}: {error}"
        return RegionMap(mappings, read_perf_map(pid), (), [vdso] if vdso else [],
                         source="core"), ""
    if process.GetPluginName() != "gdb-remote" or not os.path.exists(f"/proc/{pid}/maps"):
        # A minidump (LLDB's own `process save-core` on Linux) or a remote process:
        # LLDB's region list (a minidump carries the process's /proc/PID/maps).
        return RegionMap(sb_mappings(process), read_perf_map(pid),
                         source="core" if process.GetPluginName() != "gdb-remote" else "maps"), ""
    return RegionMap(read_proc_maps(pid), read_perf_map(pid)), ""


def sb_mappings(process: "lldb.SBProcess") -> List[Mapping]:
    """Mappings as LLDB's memory region list gives them (bounded)."""
    regions = process.GetMemoryRegions()
    mappings = []
    for index in range(min(regions.GetSize(), 100000)):
        info = lldb.SBMemoryRegionInfo()
        if not regions.GetMemoryRegionAtIndex(index, info) or not info.IsMapped():
            continue
        perms = (("r" if info.IsReadable() else "-") + ("w" if info.IsWritable() else "-")
                 + ("x" if info.IsExecutable() else "-") + "p")
        mappings.append(Mapping(info.GetRegionBase(), info.GetRegionEnd(), perms,
                                info.GetName() or ""))
    return mappings


def region_map(process: "lldb.SBProcess") -> Tuple[RegionMap, str]:
    """The region map of this stop of ``process`` (built once per stop id)."""
    key = (process.GetUniqueID(), process.GetProcessID())
    stop_id = process.GetStopID()
    cached = _maps.get(key)
    if cached is not None and cached[0] == stop_id:
        return cached[1], cached[2]
    regions, problem = build_region_map(process)
    if len(_maps) > 16:
        _maps.clear()
    _maps[key] = (stop_id, regions, problem)
    return regions, problem
