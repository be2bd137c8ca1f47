"""Names for JIT frames: the perf map's or runtime's name, else the region and offset."""

from typing import Optional

from .model import Unwound
from .regions import RegionMap


def jit_frame_name(regions: RegionMap, pc: int, innermost: bool = False) -> Optional[str]:
    """``py::f:/app.py`` from a perf map, else ``[jit 0xSTART+0xOFFSET]``; None when
    ``pc`` is not JIT code."""
    lookup = pc if innermost else pc - 1
    symbol = regions.symbol_at(lookup)
    if symbol is not None and symbol.name:
        return symbol.name
    region = regions.jit_region_at(lookup)
    if region is None:
        return None
    return f"[jit {region.start:#x}+{pc - region.start:#x}]"


def describe_unwind(unwound: Unwound, show_method: bool) -> str:
    """The suffix a frame's name gets: how its caller was found, or why the walk ends."""
    parts = []
    if show_method:
        parts.append(f"[via {unwound.method}]")
    if unwound.stop_reason:
        parts.append(walk_stopped(unwound.stop_reason))
    return " ".join(parts)


def walk_stopped(reason: str) -> str:
    """The note on the last frame of a walk that ended early: our unwinder's reason, or
    GDB's own (e.g. "Cannot access memory at address 0x7ffd0000fff8")."""
    return f"[unwind stopped: {reason}]"
