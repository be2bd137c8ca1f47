"""The small interface the core needs from a debugger: memory and registers.

Adapters (``jit_unwind.gdb``) implement it over a live debugger; tests implement it
over recorded bytes or a core file.  Unreadable memory is normal while unwinding, so
every read either returns the bytes or raises :class:`MemoryReadError`.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import struct
from typing import Any, Callable, Dict, Optional


class JitUnwindError(Exception):
    """Root of the errors this package raises on purpose."""


class MemoryReadError(JitUnwindError):
    """Raised when ``size`` bytes at ``address`` cannot be read."""

    def __init__(self, address: int, size: int):
        super().__init__(f"cannot read {size} bytes at {address:#x}")
        self.address = address
        self.size = size


class Memory:
    """Read-only access to the inferior's memory.  Subclasses implement ``read``."""

    def read(self, address: int, size: int) -> bytes:
        """Return exactly ``size`` bytes at ``address`` or raise MemoryReadError."""
        raise NotImplementedError

    def read_u64(self, address: int) -> int:
        return struct.unpack("<Q", self.read(address, 8))[0]

    def try_read_u64(self, address: int) -> Optional[int]:
        try:
            return self.read_u64(address)
        except MemoryReadError:
            return None

    def try_read(self, address: int, size: int) -> Optional[bytes]:
        try:
            return self.read(address, size)
        except MemoryReadError:
            return None


class BytesMemory(Memory):
    """Memory made of recorded segments ``{start: bytes}`` (tests, core files)."""

    def __init__(self, segments: Dict[int, bytes]):
        self._segments = sorted(segments.items())

    def read(self, address: int, size: int) -> bytes:
        for start, data in self._segments:
            if start <= address and address + size <= start + len(data):
                offset = address - start
                return data[offset:offset + size]
        raise MemoryReadError(address, size)


PAGE_SIZE = 4096
# A sentinel typed Any: PageCache.read's ``data`` stays ``Optional[bytes]`` to the checker.
_UNREAD: Any = object()


class PageCache(Memory):
    """``memory`` read a page at a time, each page once, for a reader of one stop that
    makes thousands of small reads close together (a thread's interpreter frames lie in
    a few pages of its data stack; 32 threads running the same code share the code
    objects' pages): each read through a debugger costs microseconds whatever its size.
    A read across a page boundary, or in a page that cannot be read whole, is passed
    on as it is.  Valid only while the process stays stopped."""

    MAX_PAGES = 4096  # 16 MiB kept at most

    def __init__(self, memory: Memory):
        self.memory = memory
        self._pages: Dict[int, Optional[bytes]] = {}

    def read(self, address: int, size: int) -> bytes:
        page = address & ~(PAGE_SIZE - 1)
        if 0 <= size and address + size <= page + PAGE_SIZE and address >= 0:
            data = self._pages.get(page, _UNREAD)
            if data is _UNREAD:
                data = self.memory.try_read(page, PAGE_SIZE)
                if len(self._pages) < self.MAX_PAGES:
                    self._pages[page] = data
            if data is not None:
                offset = address - page
                return data[offset:offset + size]
        return self.memory.read(address, size)


# A register reader returns the register's value in the frame being unwound, or None
# when the debugger does not know it (e.g. "<not saved>" in an outer frame).
RegisterReader = Callable[[str], Optional[int]]
