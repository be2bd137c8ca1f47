"""``info jit-regions`` (GDB), ``jit-regions`` (LLDB): the JIT code regions."""

from ..debugger import Process
from ..dependencies import warn_missing
from ..regions.jitdump import user_path
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
    lines += _jitdump_lines(process, cache)
    return "\n".join(lines)


def _jitdump_lines(process: Process, cache: StopCache):
    """Which jitdump was read, or why the user's was not."""
    try:
        dump = cache.jitdump()
    except Exception:  # already reported as the cache's problem
        return []
    lines = []
    if user_path() and dump.path != user_path():
        lines.append(f"warning: {user_path()} is no jitdump of process {process.pid()}")
    if dump.path:
        count = len(dump.loads)
        text = (f"jitdump {dump.path}: {count} function{'s' if count != 1 else ''} whose "
                "code is in memory")
        if dump.dropped:
            text += f", {dump.dropped} no longer in memory"
        if dump.pending:
            text += f", {dump.pending} read from the writer's unflushed buffer"
        lines.append(text)
    return lines
