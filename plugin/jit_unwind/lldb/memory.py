"""The core's Memory over an LLDB process (live or core file)."""

import lldb

from ..target import Memory, MemoryReadError


class LldbMemory(Memory):
    def __init__(self, process: "lldb.SBProcess"):
        self._process = process

    def read(self, address: int, size: int) -> bytes:
        if address < 0 or size <= 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        error = lldb.SBError()
        data = self._process.ReadMemory(address, size, error)
        if error.Fail() or data is None or len(data) != size:
            raise MemoryReadError(address, size)
        return bytes(data)
