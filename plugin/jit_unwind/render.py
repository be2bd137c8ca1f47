"""Text for commands: no debugger I/O here, callers print the strings."""

from typing import Iterable

from .model import Region

REGION_HEADERS = ("start", "end", "size", "source", "name")


def region_rows(regions: Iterable[Region]):
    return [(f"{r.start:#x}", f"{r.end:#x}", f"{r.size:#x}", r.source, r.name or "")
            for r in regions]


def region_table(regions: Iterable[Region]) -> str:
    """The ``info jit-regions`` table; a sentence when there is nothing to list."""
    rows = region_rows(regions)
    if not rows:
        return "No JIT regions: no anonymous executable memory and no perf map entries."
    from tabulate import tabulate  # imported lazily: only this command needs it
    return tabulate(rows, headers=REGION_HEADERS, tablefmt="simple", disable_numparse=True)
