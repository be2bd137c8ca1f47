"""Register everything with GDB once."""

import gdb

from .commands import InfoJitRegions
from .frame_filter import JitFrameFilter
from .discovery import jit_interface_regions
from .mixed_bt import PyMixedBt
from .python_runtime import jit_code_regions
from .settings import register_settings
from .state import STATE
from .unwinder import JitUnwinder

_installed = False


def install() -> None:
    """Register the unwinder, frame filter, commands and settings (idempotent)."""
    global _installed
    if _installed:
        return
    register_settings()
    InfoJitRegions()
    PyMixedBt()
    STATE.connect()
    STATE.symbol_loaders[:] = [lambda: jit_interface_regions(STATE.regions().mappings),
                               jit_code_regions]
    gdb.unwinder.register_unwinder(None, JitUnwinder(), replace=True)
    frame_filter = JitFrameFilter()
    gdb.frame_filters[frame_filter.name] = frame_filter
    _installed = True
