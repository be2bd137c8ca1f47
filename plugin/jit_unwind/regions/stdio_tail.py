"""Bytes a process has written to a stdio stream but not yet flushed to its file.

A jitdump writer (CPython's ``-X perf_jit``) writes through a ``FILE *`` with a buffer
of 4 KB or more, so while the process runs, the file on disk lacks its newest records:
the code the program compiled last, the very code a stop is likely to be in.  glibc
keeps every open stream on a list headed by the exported ``_IO_list_all``; each
stream's unflushed output lies between ``_IO_write_base`` and ``_IO_write_ptr``.  The
field offsets below are those of glibc's public ``struct _IO_FILE`` on x86-64, an ABI
that has not changed since glibc 2.1.  Only read, never written; every loop bounded.
"""

from __future__ import annotations

from typing import List

from ..target import Memory

WRITE_BASE, WRITE_PTR, CHAIN = 0x20, 0x28, 0x68
MAX_STREAMS = 64
MAX_PENDING = 4 << 20  # CPython 3.15 buffers 2 MB
MAX_TOTAL = 16 << 20


def pending_writes(memory: Memory, list_all_address: int) -> List[bytes]:
    """The unflushed output of every stream on glibc's stream list (``_IO_list_all``
    at ``list_all_address``), streams with nothing pending left out."""
    found = []
    stream = memory.try_read_u64(list_all_address)
    seen = set()
    total = 0
    for _ in range(MAX_STREAMS):
        if not stream or stream in seen:
            break
        seen.add(stream)
        header = memory.try_read(stream, CHAIN + 8)
        if header is None:
            break
        base = int.from_bytes(header[WRITE_BASE:WRITE_BASE + 8], "little")
        pointer = int.from_bytes(header[WRITE_PTR:WRITE_PTR + 8], "little")
        size = pointer - base
        if base and 0 < size <= MAX_PENDING and total + size <= MAX_TOTAL:
            data = memory.try_read(base, size)
            if data:
                found.append(data)
                total += size
        stream = int.from_bytes(header[CHAIN:CHAIN + 8], "little")
    return found
