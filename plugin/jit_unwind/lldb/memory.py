"""The core's Memory over an LLDB process (live or core file)."""

import lldb

from ..target import Memory, MemoryReadError

# Reads of a core that stop at a segment's end, read on from there: a read spans few.
MAX_CORE_PIECES = 16


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
        if not self._core:
            data = self._read_process(address, size)
            if len(data) == size:
                return data
            raise MemoryReadError(address, size)
        # lldb-19 ends a core read at the end of the segment it starts in, even when
        # the next segment goes on at that address (libpython's .data, then its .bss
        # in an anonymous mapping): read on from where it stopped.
        data = b""
        for _ in range(MAX_CORE_PIECES):
            piece = self._read_core(address + len(data), size - len(data))
            if not piece:
                break
            data += piece
            if len(data) == size:
                return data
        raise MemoryReadError(address, size)

    def _read_process(self, address: int, size: int) -> bytes:
        """The bytes the process gives from ``address``: all, the first few, or none."""
        error = lldb.SBError()
        data = self._process.ReadMemory(address, size, error)
        return bytes(data) if error.Success() and data is not None else b""

    def _read_core(self, address: int, size: int) -> bytes:
        """The first bytes from ``address`` the core holds, else all ``size`` bytes from
        the mapped file's section, else none."""
        data = self._read_process(address, size)
        if data:
            return data
        sbaddress = self._target.ResolveLoadAddress(address)
        if sbaddress.GetSection().GetFileByteSize() > 0:  # not a NOBITS section
            error = lldb.SBError()
            # LLDB 23 fills the buffer from the file and still reports the core's
            # "does not contain" error: the length tells.
            data = self._target.ReadMemory(sbaddress, size, error)
            if data is not None and len(data) == size:
                return bytes(data)
        return b""
