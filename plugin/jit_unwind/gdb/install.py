"""Register everything with GDB once."""

import os
import sys

import gdb

from ..wrapper_env import announced, kept_out_message, wrapper_variables

from .commands import register_commands
from .frame_filter import JitFrameFilter
from .settings import register_settings
from .state import STATE, connect_events
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
    _keep_wrapper_environment_out()
    _installed = True
    symfile.refresh()  # a core or process GDB already had when the plugin was loaded
    if STATE.has_jit:
        symfile.connect_stops()


def _keep_wrapper_environment_out() -> None:
    """gdb-for-pwndbg's wrapper sets PYTHONHOME etc. for GDB's Python: not for the
    program GDB runs (the core's rule says which are the wrapper's)."""
    names = wrapper_variables(os.environ, (sys.prefix, sys.exec_prefix), gdb.PYTHONDIR,
                              _program_value)
    for name in names:
        gdb.execute(f"unset environment {name}", to_string=True)
    if names and announced():  # stderr: stdout is the user's commands' output
        gdb.write(kept_out_message(names, "GDB") + "\n", gdb.STDERR)


def _program_value(name: str):
    """The value of ``name`` in the environment GDB gives the program ("show
    environment NAME" prints "NAME = VALUE"), None when unset."""
    try:
        text = gdb.execute(f"show environment {name}", to_string=True).rstrip("\n")
    except gdb.error:
        return None
    prefix = f"{name} = "
    return text[len(prefix):] if text.startswith(prefix) else None
