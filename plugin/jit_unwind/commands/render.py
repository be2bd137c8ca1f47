"""Text for commands: no debugger I/O here, callers print the strings."""

from __future__ import annotations  # annotations unevaluated: less work at load

from typing import Iterable, Optional, Sequence

from ..model import Region

REGION_HEADERS = ("start", "end", "size", "source", "name")

_have_tabulate: Optional[bool] = None


def have_tabulate() -> bool:
    global _have_tabulate
    if _have_tabulate is None:
        try:
            import tabulate  # noqa: F401
            _have_tabulate = True
        except ImportError:
            _have_tabulate = False
    return _have_tabulate


def region_rows(regions: Iterable[Region]):
    return [(f"{r.start:#x}", f"{r.end:#x}", f"{r.size:#x}", r.source, r.name or "")
            for r in regions]


def region_table(regions: Iterable[Region]) -> str:
    """The ``info jit-regions`` table; a sentence when there is nothing to list."""
    rows = region_rows(regions)
    if not rows:
        return "No JIT regions: no anonymous executable memory and no perf map entries."
    if not have_tabulate():
        return plain_table(rows, REGION_HEADERS)
    from tabulate import tabulate  # imported lazily: only this command needs it
    return tabulate(rows, headers=REGION_HEADERS, tablefmt="simple", disable_numparse=True)


def region_summary(regions: Sequence[Region]) -> str:
    """How many regions, of what total size and spanning which addresses, per source
    (the ``info jit-regions`` summary)."""
    by_source: dict = {}
    for region in regions:
        by_source.setdefault(region.source, []).append(region)
    rows = [(str(source), str(len(group)), f"{sum(r.size for r in group):#x}",
             f"{min(r.start for r in group):#x}", f"{max(r.end for r in group):#x}")
            for source, group in sorted(by_source.items(), key=lambda item: -len(item[1]))]
    headers = ("source", "regions", "total size", "lowest", "highest")
    if not have_tabulate():
        return plain_table(rows, headers)
    from tabulate import tabulate
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def plain_table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """Left-aligned columns under dashed headers (tabulate's "simple" layout, for a
    Python without tabulate)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells):
        return "  ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()

    return "\n".join([line(headers), line("-" * width for width in widths)]
                     + [line(row) for row in rows])
