"""``info jit-regions`` (GDB), ``jit-regions`` (LLDB): the JIT code regions."""

from __future__ import annotations  # annotations unevaluated: less work at load

from ..records import record
from typing import Callable, List, Optional, Tuple, cast

from ..debugger import Process
from ..dependencies import warn_missing
from .render import have_tabulate, region_summary, region_table
from ..model import Region, RegionSource
from ..stop.cache import StopCache
from ..target import JitUnwindError
from . import CommandError
from .registry import STATUS, Command, declare, provenance

# More regions than this and a bare "info jit-regions" prints the summary by source
# instead of every row (a -X perf run has hundreds of perf-map entries).
SUMMARY_ABOVE = 30

HELP = f"""List the JIT code regions of the current process.

Usage: info jit-regions [ADDRESS] [--source SOURCE] [--all]

Shows anonymous executable mappings (source "maps" for a live process, from
/proc/PID/maps; "core" for a core file, from its load segments), entries of the perf
map /tmp/perf-PID.map ("perf-map"), code load records of the perf jitdump jit-PID.dump
("jitdump": those whose code is still in memory), CPython's JIT executors
("cpython-jit"), object files registered through GDB's JIT interface ("gdb-jit") and
code of mapped files without unwind information ("no-cfi"), one row each: start, end,
size, source and name.  With more than {SUMMARY_ABOVE} regions it prints a summary
instead: how many regions, and their total size, from each source.

  ADDRESS           only the regions holding ADDRESS ($pc, 0x7f...; in GDB any
                    expression).
  --source SOURCE   only the regions of SOURCE (one of the sources above).
  --all             every region, however many.

While jit-unwind's symbol file for JIT code is loaded (set jit-unwind symbol-file), a
line after the table names the file and says which named regions it holds: all of
them, or all but those it lists."""


@record
class _Query:
    address: Optional[str] = None  # the expression, as typed
    source: Optional[str] = None
    all: bool = False


def _parse(argument: str) -> _Query:
    """``[ADDRESS] [--source SOURCE] [--all]``; ADDRESS is what is left (an expression
    may hold spaces: "$sp + 8")."""
    query, rest = _Query(), []
    words = argument.split()
    while words:
        word = words.pop(0)
        if word == "--all":
            query.all = True
        elif word == "--source" or word.startswith("--source="):
            value = word.partition("=")[2] or (words.pop(0) if words else "")
            if value not in SOURCES:
                raise CommandError(f"info jit-regions: --source takes one of "
                                   f"{', '.join(SOURCES)}, not {value!r}.")
            query.source = value
        elif word.startswith("--"):
            raise CommandError(f"info jit-regions: no option {word}. "
                               f"Usage: info jit-regions [ADDRESS] [--source SOURCE] [--all]")
        else:
            rest.append(word)
    query.address = " ".join(rest) or None
    return query


SOURCES = [source.value for source in RegionSource]


def _address(text: str, evaluate: Optional[Callable[[str], int]]) -> int:
    if evaluate is not None:
        return evaluate(text)
    try:
        return int(text, 0)
    except ValueError:
        raise CommandError(f"info jit-regions: {text!r} is no address.") from None


def jit_regions(process: Process, cache: StopCache, argument: str,
                symbol_file: Optional[Tuple[str, Callable[[Region], bool]]] = None,
                evaluate: Optional[Callable[[str], int]] = None) -> str:
    """The table, or the summary by source (with a warning line first when a source
    could not be read); ``symbol_file``: (path, predicate on a Region) while a symbol
    file is loaded; ``evaluate``: the debugger's value of an address expression."""
    query = _parse(argument)
    if process.pid() is None:
        raise CommandError("No process: run a program or load a core file first.")
    address = _address(query.address, evaluate) if query.address else None
    try:
        regions = cache.named_regions().listing()
    except JitUnwindError as error:  # the debugger's refusal, unreadable memory
        raise CommandError(f"info jit-regions: cannot list the JIT regions: {error}") from None
    lines = [f"warning: {cache.problem}"] if cache.problem else []
    if not have_tabulate():
        warn_missing(process, "tabulate", "info jit-regions prints its table in a plain layout")
    lines += _listing(regions, query, address)
    lines += _jitdump_lines(process, cache)
    if symbol_file is not None:
        lines.extend(symbol_file_lines(cache.named_regions(), *symbol_file))
    return "\n".join(lines)


def _listing(regions: List[Region], query: _Query, address: Optional[int]) -> List[str]:
    """The rows the query asks for, or the summary when it asks for none in particular
    and there are many."""
    chosen = [r for r in regions if (query.source is None or r.source == query.source)
              and (address is None or address in r)]
    if address is None and query.source is None:
        if query.all or len(regions) <= SUMMARY_ABOVE:
            return [region_table(regions)]
        return [region_summary(regions),
                f"{len(regions)} regions: \"info jit-regions --all\" lists them, "
                "\"info jit-regions --source SOURCE\" those of one source, "
                "\"info jit-regions ADDRESS\" those holding an address."]
    if chosen:
        return [region_table(chosen)]
    where = f" holds {address:#x}" if address is not None else ""
    source = f" from {query.source}" if query.source else ""
    text = f"No JIT region{source}{where}." if where else f"No JIT regions{source}."
    return [text + (f" There are {len(regions)} regions: \"info jit-regions\" sums them "
                    "up." if regions else "")]


def _jitdump_lines(process: Process, cache: StopCache):
    """Which jitdump was read, or why the user's was not."""
    from ..regions.jitdump import user_path
    try:
        dump = cache.jitdump()
    except JitUnwindError:  # already reported as the cache's problem
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
    # (needs_process: the adapters run it with a process and its cache)
    run=lambda context, argument: jit_regions(
        cast(Process, context.process), cast(StopCache, context.cache), argument,
        context.symbol_file, context.evaluate)))
