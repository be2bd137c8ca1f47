"""The core's Memory interface over the selected GDB inferior."""

import gdb

from ..target import Memory, MemoryReadError


class GdbMemory(Memory):
    def read(self, address: int, size: int) -> bytes:
        if address < 0 or size < 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        try:
            return gdb.selected_inferior().read_memory(address, size).tobytes()
        except (gdb.MemoryError, gdb.error, OverflowError, ValueError):
            raise MemoryReadError(address, size) from None
