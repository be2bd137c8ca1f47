"""Register everything with GDB once."""

import gdb

from .commands import register_commands
from .frame_filter import JitFrameFilter
from .settings import register_settings
from .state import connect_events
from . import symfile
from .unwinder import JitUnwinder

_installed = False


def install() -> None:
    """Register the unwinder, frame filter, commands and settings (idempotent)."""
    global _installed
    if _installed:
        return
    register_settings()
    register_commands()
    connect_events()
    gdb.unwinder.register_unwinder(None, JitUnwinder(), replace=True)
    frame_filter = JitFrameFilter()
    gdb.frame_filters[frame_filter.name] = frame_filter
    symfile.connect()
    _installed = True
    symfile.refresh()  # a core or process GDB already had when the plugin was loaded
