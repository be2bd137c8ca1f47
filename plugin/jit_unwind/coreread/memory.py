"""A core's memory: its segments' bytes, else (as GDB reads a core) the bytes of the
file a mapping the core left out maps there (gcore and the kernel leave out read-only
file-backed mappings: library code)."""

import mmap
from typing import Optional

from ..file_cache import FileCache
from ..target import Memory, MemoryReadError
from .image import CoreImage

_mapped: FileCache[Optional[object]] = FileCache(64)


def _map_file(path: str):
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


def file_contents(path: str):
    """The bytes of ``path`` (mapped), None when it cannot be read."""
    return _mapped.get(path, _map_file, None)


class CoreMemory(Memory):
    """Reads pieced together across adjacent segments and mapped files, as a debugger's
    core target reads them; MemoryReadError where neither holds the bytes."""

    def __init__(self, image: CoreImage):
        self.image = image
        self._files: dict = {}  # path -> contents, looked up once per core (no stat)

    def read(self, address: int, size: int) -> bytes:
        if size < 0 or address < 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        return self._base(address, size)

    def _base(self, address: int, size: int) -> bytes:
        pieces = []
        position, end = address, address + size
        while position < end:
            piece = self._piece(position, end)
            if piece is None:
                raise MemoryReadError(address, size)
            pieces.append(piece)
            position += len(piece)
        return b"".join(pieces) if len(pieces) != 1 else pieces[0]

    def core_bytes(self, offset: int, size: int) -> Optional[bytes]:
        """``size`` bytes of the core file at ``offset``, None past its end (a core cut
        short on disk)."""
        data = self.image.data[offset:offset + size]
        return data if len(data) == size else None

    def _piece(self, address: int, end: int) -> Optional[bytes]:
        """Bytes from ``address`` up to ``end`` or the end of what holds ``address``."""
        segment = self.image.segment_at(address)
        if segment is not None:
            stop = min(end, segment.end)
            return self.core_bytes(segment.offset + address - segment.start, stop - address)
        mapping = self.image.file_at(address)
        if mapping is None:
            return None
        content = self._files.get(mapping.path, False)
        if content is False:
            content = self._files[mapping.path] = file_contents(mapping.path)
        offset = mapping.offset + address - mapping.start
        size = min(end, mapping.end) - address
        if content is None or offset + size > len(content):
            return None
        return content[offset:offset + size]
