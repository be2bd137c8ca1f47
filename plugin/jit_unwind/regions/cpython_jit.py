"""Regions of CPython's JIT code, made from :mod:`jit_unwind.cpython.executors`."""

from typing import Iterable, List

from ..cpython.executors import Executor
from ..model import CodeKind, Region, RegionSource

__all__ = ["REGION_SOURCE", "executor_regions"]

REGION_SOURCE = RegionSource.CPYTHON_JIT


def executor_regions(executors: Iterable[Executor]) -> List[Region]:
    """Two regions per executor (source ``cpython-jit``): its entry shim
    ``[jit_code, jit_side_entry)`` named ``[jit shim] f (file:line)`` (absent when the
    shim is shared, 3.15) and its trace ``[jit_side_entry, jit_code + jit_size)`` named
    ``[jit] f (file:line) trace 0xJIT_CODE``.  The trace region includes the data and
    padding after the code: CPython does not record where the code ends."""
    regions = []
    for executor in executors:
        label = executor.description
        if executor.has_shim:
            regions.append(Region(executor.jit_code, executor.shim_end, REGION_SOURCE,
                                  f"[jit shim] {label}", kind=CodeKind.SHIM,
                                  owner=executor.code_address))
        regions.append(Region(executor.shim_end, executor.end, REGION_SOURCE,
                              f"[jit] {label} trace {executor.jit_code:#x}", kind=CodeKind.TRACE,
                              owner=executor.code_address))
    return regions
