"""Names for JIT frames: the perf map's or runtime's name, else the region and offset."""

from __future__ import annotations

from typing import Optional

from ..regions import RegionMap


def jit_frame_name(regions: RegionMap, pc: int, innermost: bool = False) -> Optional[str]:
    """``py::f:/app.py`` from a perf map, else ``[jit 0xSTART+0xOFFSET]``; None when
    ``pc`` is not JIT code.  Once per address and stop (a JIT stack returns to the same
    few addresses again and again)."""
    key = ("named", "jit-frame-name", pc, innermost)
    memo = regions.memo
    if key not in memo:
        memo[key] = _jit_frame_name(regions, pc, innermost)
    return memo[key]


def _jit_frame_name(regions: RegionMap, pc: int, innermost: bool) -> Optional[str]:
    lookup = pc if innermost else pc - 1
    symbol = regions.symbol_at(lookup)
    if symbol is not None and symbol.name:
        return symbol.name
    region = regions.jit_region_at(lookup)
    if region is None:
        return None
    return f"[jit {region.start:#x}+{pc - region.start:#x}]"
