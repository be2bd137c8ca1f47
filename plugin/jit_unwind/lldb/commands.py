"""``jit-regions`` and ``py-mixed-bt`` for LLDB (``command script add -c``)."""

import lldb

from ..render import region_table
from .registration import ensure_provider
from .state import region_map


def _process(exe_ctx, result):
    process = exe_ctx.GetProcess()
    if not process.IsValid() or process.GetProcessID() in (0, lldb.LLDB_INVALID_PROCESS_ID):
        result.SetError("No process: launch a program or load a core file first.")
        return None
    ensure_provider(exe_ctx.GetTarget())
    return process


class JitRegions:
    """List the JIT code regions of the current process.

Usage: jit-regions

Shows anonymous executable mappings (from /proc/PID/maps for a live process, from the
load segments of a core file) and entries of the perf map /tmp/perf-PID.map, one row
each: start, end, size, source and name."""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "List the JIT code regions of the current process."

    def get_long_help(self):
        return self.__doc__

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            if command.strip():
                result.SetError("jit-regions takes no arguments.")
                return
            process = _process(exe_ctx, result)
            if process is None:
                return
            regions, problem = region_map(process)
            if problem:
                result.AppendMessage(f"warning: {problem}")
            result.AppendMessage(region_table(regions.listing()))
        except Exception as error:  # never a traceback
            result.SetError(f"jit-regions: cannot list the JIT regions: {error}")


def add_commands(debugger) -> None:
    interpreter = debugger.GetCommandInterpreter()
    for name, cls in (("jit-regions", "JitRegions"), ("py-mixed-bt", "JitRegions")):
        result = lldb.SBCommandReturnObject()
        interpreter.HandleCommand(
            f"command script add -o -c jit_unwind.lldb.commands.{cls} {name}", result)
        if not result.Succeeded():
            raise RuntimeError(f"cannot add {name}: {result.GetError()}")
