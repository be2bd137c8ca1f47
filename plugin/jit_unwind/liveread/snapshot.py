"""The pages of a live process that one walk read, kept: the walk runs once while the
threads are stopped (naming frames by the symbol tables only, which needs no DWARF),
the process goes on, and the full walk (DWARF names, files, lines) runs again over the
kept pages, the same bytes the stopped process held.  The process stays stopped only
for the memory part of the work."""

from typing import Dict, Optional

from ..target import PAGE_SIZE, Memory, MemoryReadError

MAX_PAGES = 16384  # 64 MiB kept at most; beyond, reads go to the process


class SnapshotMemory(Memory):
    """``memory`` read a page at a time, every page kept (a read across pages is
    pieced together from them); a page that cannot be read whole is kept as the
    exact reads made in it.  After :meth:`freeze`, a read of something the walk never
    read goes to the process (running by then): ``late_reads`` counts them."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self._pages: Dict[int, Optional[bytes]] = {}
        self._exact: Dict[tuple, Optional[bytes]] = {}
        self.frozen = False
        self.late_reads = 0

    def freeze(self) -> None:
        self.frozen = True

    def read(self, address: int, size: int) -> bytes:
        if size < 0 or address < 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        page = address & ~(PAGE_SIZE - 1)
        if address + size <= page + PAGE_SIZE:
            data = self._page(page)
            if data is not None:
                offset = address - page
                return data[offset:offset + size]
            return self._exact_read(address, size)
        pieces = []
        position, end = address, address + size
        while position < end:
            stop = min(end, (position & ~(PAGE_SIZE - 1)) + PAGE_SIZE)
            try:
                pieces.append(self.read(position, stop - position))
            except MemoryReadError:
                raise MemoryReadError(address, size) from None
            position = stop
        return b"".join(pieces)

    def _page(self, page: int) -> Optional[bytes]:
        if page in self._pages:
            return self._pages[page]
        if self.frozen:
            self.late_reads += 1
        data = self.memory.try_read(page, PAGE_SIZE)
        if len(self._pages) < MAX_PAGES:
            self._pages[page] = data
        return data

    def _exact_read(self, address: int, size: int) -> bytes:
        key = (address, size)
        if key in self._exact:
            data = self._exact[key]
        else:
            if self.frozen:
                self.late_reads += 1
            data = self.memory.try_read(address, size)
            self._exact[key] = data
        if data is None:
            raise MemoryReadError(address, size)
        return data
