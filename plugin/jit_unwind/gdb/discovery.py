"""Build the RegionMap of the selected inferior: live process, core file or remote."""

import re
import sys
from typing import List, Optional, Tuple

import gdb

from ..model import Region
from ..regions import Mapping, RegionMap
from ..elf_lookup import symbol_address
from ..render import missing_dependency
from ..regions.corefile import read_core_mappings
from ..regions.jit_interface import read_jit_interface
from ..regions.perfmap import read_perf_map
from ..regions.procmaps import read_proc_maps
from .memory import GdbMemory

_CORE_LINE = re.compile(r"Local core dump file:\s*\n\s*`(.+?)', file type")
GDB_PYTHON = f"GDB's Python {sys.version_info[0]}.{sys.version_info[1]}"
# What jit-unwind cannot do without pyelftools (one sentence for every message).
WITHOUT_PYELFTOOLS = ("without it jit-unwind finds no JIT code in core files, and "
                      "finds the CPython runtime only through debug info")
_warned = set()


def missing(package: str, consequence: str) -> str:
    """The one-line message for ``package`` missing from GDB's Python."""
    return missing_dependency(package, consequence, GDB_PYTHON)


def warn_missing(package: str, consequence: str) -> None:
    """Say once per GDB session that ``package`` is missing and what that costs."""
    if package not in _warned:
        _warned.add(package)
        gdb.write(f"warning: jit-unwind: {missing(package, consequence)}\n", gdb.STDERR)


def connection_type(inferior) -> str:
    connection = getattr(inferior, "connection", None)
    return connection.type if connection is not None else ""


def core_file_path(inferior) -> Optional[str]:
    corefile = getattr(inferior, "corefile", None)  # GDB 17+
    if corefile is not None:
        return corefile.filename
    match = _CORE_LINE.search(gdb.execute("info target", to_string=True))
    return match.group(1) if match else None


def _remote_mappings() -> List[Mapping]:
    """Parse ``info proc mappings`` for targets we cannot read /proc of directly."""
    try:
        text = gdb.execute("info proc mappings", to_string=True)
    except gdb.error:
        return []
    mappings = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].startswith("0x") and fields[1].startswith("0x"):
            perms = next((f for f in fields[4:5] if re.fullmatch(r"[r-][w-][x-][ps]", f)), None)
            if perms is None:
                continue
            path = " ".join(fields[5:]) if len(fields) > 5 else ""
            mappings.append(Mapping(int(fields[0], 16), int(fields[1], 16), perms, path,
                                    int(fields[3], 16)))
    return mappings


def _mappings(inferior, kind: str) -> Tuple[List[Mapping], List[int], str]:
    """Mappings, starts of anonymous executable mappings that are not JIT code, and a
    problem description ("" when fine)."""
    if kind == "core":
        path = core_file_path(inferior)
        if not path:
            return [], [], "cannot tell which core file is loaded"
        try:
            mappings, vdso = read_core_mappings(path)
        except ImportError:
            warn_missing("pyelftools", WITHOUT_PYELFTOOLS)
            return [], [], missing("pyelftools", WITHOUT_PYELFTOOLS)
        except Exception as error:  # a truncated or foreign core
            return [], [], f"cannot read core file {path}: {error}"
        return mappings, [vdso] if vdso else [], ""
    if kind == "native":
        return read_proc_maps(inferior.pid), [], ""
    return _remote_mappings(), [], ""


def _debug_info_variable(name: str) -> Optional[int]:
    """Address of a global variable from GDB's debug info, None without."""
    try:
        symbol = gdb.lookup_global_symbol(name)
        if symbol is None:
            return None
        address = symbol.value().address
        return int(address) if address is not None else None
    except (gdb.error, ValueError):
        return None


def jit_interface_regions(mappings) -> List[Region]:
    """Object files registered through GDB's JIT interface (listed, left to GDB)."""
    descriptor = symbol_address(mappings, "__jit_debug_descriptor")
    if descriptor is None:  # not exported (an executable without -rdynamic): debug info
        descriptor = _debug_info_variable("__jit_debug_descriptor")
    if descriptor is None:
        return []
    return read_jit_interface(GdbMemory(), descriptor)


def build_region_map(inferior) -> Tuple[RegionMap, str]:
    if inferior.pid <= 0:
        return RegionMap(), "no process"
    kind = connection_type(inferior)
    mappings, not_jit, problem = _mappings(inferior, kind)
    return RegionMap(mappings, read_perf_map(inferior.pid), (), not_jit,
                     source="core" if kind == "core" else "maps"), problem

