"""``info jit-regions`` (GDB), ``jit-regions`` (LLDB): the JIT code regions."""

from typing import Callable, List, Optional, Tuple

from ..debugger import Process
from ..dependencies import warn_missing
from ..render import have_tabulate, region_table
from ..model import Region
from ..session import StopCache
from . import CommandError
from .registry import STATUS, Command, declare, provenance

HELP = """List the JIT code regions of the current process.

Usage: info jit-regions

Shows anonymous executable mappings (from /proc/PID/maps for a live process, from the
load segments of a core file), entries of the perf map /tmp/perf-PID.map, code load
records of the perf jitdump jit-PID.dump (source "jitdump": those whose code is still in
memory), CPython's JIT executors and object files registered through GDB's JIT
interface, one row each: start, end, size, source and name.  While jit-unwind's symbol
file for JIT code is loaded (set jit-unwind symbol-file), a line after the table names
the file and says which named regions it holds: all of them, or all but those it lists."""


def jit_regions(process: Process, cache: StopCache, argument: str,
                symbol_file: Optional[Tuple[str, Callable[[Region], bool]]] = None) -> str:
    """The table (with a warning line first when a source could not be read);
    ``symbol_file``: (path, predicate on a Region) while a symbol file is loaded."""
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
    if symbol_file is not None:
        lines.extend(symbol_file_lines(cache.named_regions(), *symbol_file))
    return "\n".join(lines)


def _jitdump_lines(process: Process, cache: StopCache):
    """Which jitdump was read, or why the user's was not."""
    from ..regions.jitdump import user_path
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


def symbol_file_lines(regions, path: str, covers: Callable[[Region], bool]) -> List[str]:
    """Which named regions (perf map, runtime; not GDB's JIT interface, which GDB names
    itself) the loaded symbol file holds."""
    named = list(regions.symbols)
    left_out = [r for r in named if not covers(r)]
    sources = ", ".join(sorted({r.source for r in named})) or "named"
    if not left_out:
        return [f"Symbol file {path}: all {len(named)} {sources} regions."]
    lines = [f"Symbol file {path}: {len(named) - len(left_out)} of the {len(named)} "
             f"{sources} regions; not in it (overlapped by a later entry, or not in JIT "
             f"memory):"]
    lines += [f"  {r.start:#x}-{r.end:#x} {r.name}" for r in left_out[:20]]
    if len(left_out) > 20:
        lines.append(f"  ... and {len(left_out) - 20} more")
    return lines


def _help(debugger: str) -> str:
    return HELP + provenance(debugger)


declare(Command(
    names={"gdb": "info jit-regions", "lldb": "jit-regions"}, help=_help, category=STATUS,
    run=lambda context, argument: jit_regions(context.process, context.cache, argument,
                                              context.symbol_file)))
