"""``info jit-regions``."""

import gdb

from ..render import have_tabulate, region_table
from ..dependencies import warn_missing
from .state import STATE


class InfoJitRegions(gdb.Command):
    """List the JIT code regions of the current process.

Usage: info jit-regions

Shows anonymous executable mappings (from /proc/PID/maps for a live process, from the
load segments of a core file), entries of the perf map /tmp/perf-PID.map and object
files registered through GDB's JIT interface, one row each: start, end, size, source
and name."""

    def __init__(self):
        super().__init__("info jit-regions", gdb.COMMAND_STATUS, gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        if argument.strip():
            raise gdb.GdbError("info jit-regions takes no arguments.")
        if gdb.selected_inferior().pid <= 0:
            raise gdb.GdbError("No process: run a program or load a core file first.")
        try:
            regions = STATE.named_regions().listing()
        except Exception as error:  # never a traceback, even on a broken core
            raise gdb.GdbError(f"info jit-regions: cannot list the JIT regions: {error}") from None
        if STATE.problem:
            gdb.write(f"warning: {STATE.problem}\n")
        if not have_tabulate():
            warn_missing(STATE.process, "tabulate", "info jit-regions prints its table in a plain layout")
        gdb.write(region_table(regions) + "\n")
