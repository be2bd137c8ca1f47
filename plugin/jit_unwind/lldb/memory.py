"""The core's Memory over an LLDB process (live or core file)."""

import lldb

from ..target import Memory, MemoryReadError


class LldbMemory(Memory):
    """Reads the process's memory; for a core file, what the core lacks (GDB's gcore
    leaves out read-only file mappings: code, string constants) comes from the mapped
    files' sections, as LLDB's own ``memory read`` does not do for cores."""

    def __init__(self, process: "lldb.SBProcess"):
        self._process = process
        self._target = process.GetTarget()
        self._core = process.GetPluginName() != "gdb-remote"

    def read(self, address: int, size: int) -> bytes:
        if address < 0 or size <= 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        error = lldb.SBError()
        data = self._process.ReadMemory(address, size, error)
        if error.Success() and data is not None and len(data) == size:
            return bytes(data)
        if self._core:
            sbaddress = self._target.ResolveLoadAddress(address)
            if sbaddress.GetSection().GetFileByteSize() > 0:  # not a NOBITS section
                error = lldb.SBError()
                # LLDB 23 fills the buffer from the file and still reports the core's
                # "does not contain" error: the length tells.
                data = self._target.ReadMemory(sbaddress, size, error)
                if data is not None and len(data) == size:
                    return bytes(data)
        raise MemoryReadError(address, size)
