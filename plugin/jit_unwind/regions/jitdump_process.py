"""The jitdump records that describe a process's code as it is now.

Finds the process's dump (see :func:`jitdump.candidate_paths`; a core's pid must match
the file's), adds the records still in the writer's stdio buffer, and keeps each record
only while the process's memory holds the code it describes: JIT code is freed and its
memory reused, so the latest record for an address wins, and a record whose bytes differ
from memory is dropped.
"""

from __future__ import annotations

import bisect
import os
from typing import Callable, Dict, List, Optional, Sequence

from ..model import Mapping, Region, RegionSource
from ..records import field, record
from ..target import Memory
from .process_root import process_root
from .jitdump import (FILE_HEADER, CodeLoad, Jitdump, candidate_paths, comparable_length,
                      file_exists, find_jitdump, parse_jitdump, with_pending,
                      working_directory)

# Named regions of a jitdump come before a perf map's entries for the same code (the
# dump also holds the code's bytes, checked against memory).
SEQUENCE_BASE = 1 << 40
MAX_SPAN = 16 << 20  # largest mapping read at once to check records against memory
MAX_SINGLE_READS = 4096


@record  # not a dataclass: making one is ~0.5 ms of the first bt
class ProcessJitdump:
    path: Optional[str] = None
    loads: List[CodeLoad] = field(default_factory=list)  # checked against memory
    dropped: int = 0  # records whose code is no longer in memory
    pending: int = 0  # records read from the writer's unflushed buffer

    def __init__(self, path: Optional[str] = None, loads: Optional[List[CodeLoad]] = None,
                 dropped: int = 0, pending: int = 0):
        # Written out: the record's compiled one is ~0.1 ms of the first bt.
        self.path = path
        self.loads = [] if loads is None else loads
        self.dropped = dropped
        self.pending = pending

    def regions(self) -> List[Region]:
        return [Region(load.start, load.end, RegionSource.JITDUMP, load.name,
                       sequence=SEQUENCE_BASE + load.sequence)
                for load in self.loads if load.code_size > 0]

    def unwind_records(self) -> List[CodeLoad]:
        return [load for load in self.loads if load.unwinding is not None]


def process_jitdump(process, mappings: Sequence[Mapping], kind: str,
                    lookup_symbol: Callable[[str], Optional[int]]) -> ProcessJitdump:
    """The jitdump of ``process`` (a debugger.Process) with records checked against its
    memory; empty when it wrote none (or the file is gone)."""
    host_pid = process.pid()
    if host_pid is None:
        return ProcessJitdump()
    # A process in a container names its dump (and writes it in its header) by the pid
    # it knows itself by, and its working directory is under its root.
    root, pid = process_root(process, kind)
    pid = pid or host_pid
    mapped = [m.path for m in mappings]
    cwd = f"/proc/{host_pid}/cwd" if root and kind == "native" else \
        working_directory(process, kind)
    if not file_exists(pid, mapped, cwd):
        # Most JIT processes write no dump: the search below (each place read twice,
        # the process's start time from /proc) would be ~0.3 ms of their first bt.
        return ProcessJitdump()
    accept = _current_file(host_pid, mapped) if kind == "native" else _any
    path, dump = find_jitdump(pid, mapped, cwd, accept)
    if path is not None and dump is not None:  # (find_jitdump gives both or neither)
        full = _with_unflushed(process.memory, path, dump, lookup_symbol)
        on_disk = len(dump.loads)
    else:  # a writer that has flushed nothing yet, not even its header
        path, full = _only_unflushed(process.memory, pid, mapped, cwd, accept,
                                     lookup_symbol)
        on_disk = 0
        if full is None:
            return ProcessJitdump()
    loads = latest_loads(full.loads)
    kept = verified(loads, process.memory, mappings)
    return ProcessJitdump(path, kept, len(loads) - len(kept), len(full.loads) - on_disk)


def _only_unflushed(memory: Memory, pid: int, mapped, cwd, accept, lookup_symbol):
    """(path, records) of a dump whose file is still shorter than its header, all of
    it in the writer's stdio buffer; (None, None) without one."""
    short = [path for path in candidate_paths(pid, mapped, cwd)
             if _size(path) < FILE_HEADER and accept(path)]
    head = lookup_symbol("_IO_list_all") if short else None
    if head is None:
        return None, None
    for tail in _pending_writes(memory, head):
        for path in short:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(FILE_HEADER)
            except OSError:
                continue
            dump = parse_jitdump(data + tail)
            if dump is not None and dump.pid == pid and dump.loads:
                return path, dump
    return None, None


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size if os.path.isfile(path) else FILE_HEADER
    except OSError:
        return FILE_HEADER


def _any(_path: str) -> bool:
    return True


def _current_file(pid: int, mapped: Sequence[str]) -> Callable[[str], bool]:
    """For a live process: whether a dump with its pid is its own, not one a dead
    process with the same pid left behind: the process maps it, or it was written
    since the process started."""
    started = process_start_time(pid)

    def accept(path: str) -> bool:
        if path in mapped or started is None:
            return True
        try:
            return os.stat(path).st_mtime >= started - 2
        except OSError:
            return False
    return accept


def process_start_time(pid: int) -> Optional[float]:
    """When process ``pid`` started (seconds since the epoch), None when /proc cannot
    tell."""
    try:
        # Bytes: an ascii text file would import its codec (~0.2 ms of the first bt).
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None


def _with_unflushed(memory: Memory, path: str, dump: Jitdump, lookup_symbol) -> Jitdump:
    """``dump`` with the records its writer has not flushed yet (glibc stdio)."""
    if dump.closed:
        return dump
    head = lookup_symbol("_IO_list_all")
    if head is None:
        return dump
    tails = _pending_writes(memory, head)
    if not tails:
        return dump
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return dump
    # The file may have grown since it was parsed: parse what was read now.
    parsed = dump if len(data) == dump.size else None
    return with_pending(data, tails, parsed) or dump


def _pending_writes(memory: Memory, head: int) -> List[bytes]:
    """stdio_tail's reader, imported where a process has a jitdump (most have none: a
    module imported costs the first bt)."""
    from .stdio_tail import pending_writes
    return pending_writes(memory, head)


def latest_loads(loads: Sequence[CodeLoad]) -> List[CodeLoad]:
    """The last record for each start address (earlier ones describe freed code)."""
    by_start: Dict[int, CodeLoad] = {}
    for load in loads:
        by_start[load.code_addr] = load
    return sorted(by_start.values(), key=lambda load: load.code_addr)


def verified(loads: Sequence[CodeLoad], memory: Memory, mappings: Sequence[Mapping]
             ) -> List[CodeLoad]:
    """The records whose code bytes are in memory as the dump has them.  Memory is read
    one mapping at a time where the mapping list is known, else one record at a time
    (the first MAX_SINGLE_READS records)."""
    kept = []
    spans: Dict[int, Optional[bytes]] = {}
    ordered = sorted(mappings, key=lambda m: m.start)
    starts = [m.start for m in ordered]
    single_reads = 0
    for load in loads:
        length = comparable_length(load)
        if length == 0:
            kept.append(load)  # nothing to compare: a tiny or empty function
            continue
        mapping = _mapping_of(ordered, starts, load.code_addr)
        data = None
        if mapping is not None and load.code_addr + length <= mapping.end \
                and mapping.end - mapping.start <= MAX_SPAN:
            if mapping.start not in spans:
                spans[mapping.start] = memory.try_read(mapping.start,
                                                       mapping.end - mapping.start)
            span = spans[mapping.start]
            if span is not None:
                offset = load.code_addr - mapping.start
                data = span[offset:offset + length]
        if data is None and single_reads < MAX_SINGLE_READS:
            single_reads += 1
            data = memory.try_read(load.code_addr, length)
        if data is not None and data == load.code[:length]:
            kept.append(load)
    return kept


def _mapping_of(ordered: Sequence[Mapping], starts: List[int], address: int
                ) -> Optional[Mapping]:
    index = bisect.bisect_right(starts, address) - 1
    if index >= 0 and address in ordered[index]:
        return ordered[index]
    return None

