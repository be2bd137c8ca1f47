"""``info jit-regions`` (GDB), ``jit-regions`` (LLDB): the JIT code regions."""

from ..debugger import Process
from ..dependencies import warn_missing
from ..render import have_tabulate, region_table
from ..session import StopCache
from . import CommandError

HELP = """List the JIT code regions of the current process.

Usage: info jit-regions

Shows anonymous executable mappings (from /proc/PID/maps for a live process, from the
load segments of a core file), entries of the perf map /tmp/perf-PID.map, code load
records of the perf jitdump jit-PID.dump (source "jitdump": those whose code is still in
memory), CPython's JIT executors and object files registered through GDB's JIT
interface, one row each: start, end, size, source and name."""


def jit_regions(process: Process, cache: StopCache, argument: str) -> str:
    """The table (with a warning line first when a source could not be read)."""
    if argument.strip():
        raise CommandError("info jit-regions takes no arguments.")
    if process.pid() is None:
        raise CommandError("No process: run a program or load a core file first.")
    try:
        regions = cache.named_regions().listing()
    except Exception as error:  # never a traceback, even on a broken core
        raise CommandError(f"info jit-regions: cannot list the JIT regions: {error}") from None
    lines = [f"warning: {cache.problem}"] if cache.problem else []
    if not have_tabulate():
        warn_missing(process, "tabulate", "info jit-regions prints its table in a plain layout")
    lines.append(region_table(regions))
    return "\n".join(lines)
