"""A minidump as ``coreread``'s readers see a core: ``segments`` (the memory it holds,
at offsets in the file), ``files`` (the mapped files, from its copy of /proc/PID/maps,
else its module list), ``threads`` (registers), ``machine``, ``pid``, ``auxv``."""

import bisect
import os
from typing import List, Optional

from ..coreread.image import (REGISTER_LAYOUTS, USER_REGS, AddressIndex, FileMapping, Segment,
                              ThreadRegisters, _contents)
from ..model import Mapping
from ..regions.corefile import auxv_pairs
from ..regions.minidump import stream_directory
from ..regions.procmaps import parse_proc_maps
from .streams import SYSTEM_INFO, THREAD_LIST, Module, Streams

AT_ENTRY = 9


def _without_overlaps(ranges: List[Segment]) -> List[Segment]:
    """Sorted, each address in one range only (a thread's stack is listed in the thread
    list and the memory list both): the readers look a range up by its start."""
    kept: List[Segment] = []
    for segment in sorted(ranges, key=lambda s: (s.start, -s.end)):
        if kept and segment.start < kept[-1].end:
            if segment.end <= kept[-1].end:
                continue
            cut = kept[-1].end - segment.start
            segment = Segment(kept[-1].end, segment.end, segment.offset + cut, 0)
        kept.append(segment)
    return kept


class MinidumpImage(AddressIndex):
    """Raises OSError when the file cannot be read, ValueError when it is no minidump
    of a processor we read (x86-64, aarch64)."""

    def __init__(self, path, sysroot: str = ""):
        self.path = os.fspath(path)
        self.sysroot = sysroot
        self.data = _contents(self.path)
        with open(self.path, "rb") as handle:
            directory = stream_directory(handle)
        if directory is None:
            raise ValueError("not a minidump, or cut short before its stream directory")
        streams = Streams(self.data, directory)
        # (bytes it has, bytes its streams and memory need): a file cut short loses
        # what lies past its end (the memory 64-bit lists keep last, then the threads).
        self.size = (len(self.data), streams.size_needed())
        if THREAD_LIST not in directory or SYSTEM_INFO not in directory:
            raise ValueError("it has no thread list or no system information stream (cut "
                             f"short? it has {len(self.data)} bytes)")
        thread_list = directory[THREAD_LIST]
        if sum(thread_list) > len(self.data):
            raise ValueError(f"it is truncated: it has {len(self.data)} bytes of the "
                             f"{self.size[1]} its streams need, and its thread list is cut off")
        self.machine = streams.machine()
        if not self.machine:
            raise ValueError("a minidump of a processor other than x86-64 or aarch64")
        self.layout = REGISTER_LAYOUTS.get(self.machine, USER_REGS)
        self.pid = streams.pid()
        self.auxv = streams.auxv()
        contexts = streams.threads(self.machine)
        self.threads = [ThreadRegisters(c.tid, c.registers) for c in contexts]
        stacks = [c.stack for c in contexts if c.stack is not None]
        self.segments = _without_overlaps(streams.memory() + stacks)
        self._starts = [s.start for s in self.segments]
        self.modules = streams.modules()
        mappings = parse_proc_maps(streams.maps_text())
        # The process's mappings, its files as they are read here.
        self.mappings = [Mapping(m.start, m.end, m.perms, self.local_path(m.path), m.offset)
                         if m.path.startswith("/") else m for m in mappings]
        # Writable mappings the dump holds nothing of (a stack-only dump's data and
        # heap): the file's bytes there may be stale, never read.  Of one it holds some
        # pages of, the others are clean (LLDB's modified-memory style): the file's.
        self._written = sorted((m.start, m.end) for m in mappings
                               if "w" in m.perms and not self._holds_any(m.start, m.end))
        self.files = [FileMapping(m.start, m.end, self.local_path(m.path), m.offset)
                      for m in mappings if m.path.startswith("/")]
        if not mappings:  # no maps stream: each module from its base, offsets as addresses
            self.files = [FileMapping(m.start, m.end, self.local_path(m.path), 0)
                          for m in self.modules if m.path.startswith("/")]
        self.files.sort(key=lambda f: f.start)
        entry = dict(auxv_pairs(self.auxv)).get(AT_ENTRY)
        self.entry_path = next((m.path for m in mappings if entry is not None
                                and m.start <= entry < m.end), None)
        self._file_starts = [f.start for f in self.files]
        self._written_starts = [start for start, _end in self._written]

    def local_path(self, path: str) -> str:
        """Where a file the process mapped is read on this machine: under the sysroot
        when it is there."""
        if self.sysroot:
            rooted = os.path.join(self.sysroot, path.lstrip("/"))
            if os.path.exists(rooted):
                return rooted
        return path

    def _holds_any(self, start: int, end: int) -> bool:
        index = bisect.bisect_right(self._starts, end - 1) - 1
        return index >= 0 and self.segments[index].end > start

    def written(self, address: int) -> bool:
        """Whether the process could have written there and the dump holds nothing of
        that mapping: a file's bytes there would be a guess."""
        index = bisect.bisect_right(self._written_starts, address) - 1
        return index >= 0 and address < self._written[index][1]

    def program(self) -> Optional[Module]:
        """The program's module: the file holding the auxv's entry point, else the
        first module (Breakpad and LLDB list the program first)."""
        named = next((m for m in self.modules if m.path == self.entry_path), None)
        return named or (self.modules[0] if self.modules else None)
