"""A live process's memory, read without a debugger: process_vm_readv, else (where a
seccomp profile or an old kernel refuses it) /proc/PID/mem.  Both only read: nothing
is ever written into the process."""

import errno
from typing import BinaryIO, Optional

from ..target import Memory, MemoryReadError
from .ptrace import PtraceError, VmReader

# process_vm_readv refused, /proc/PID/mem may still be readable.
_REFUSED = (errno.ENOSYS, errno.EPERM, errno.EACCES)


class LiveMemory(Memory):
    def __init__(self, pid: int):
        self.pid = pid
        self._vm: Optional[VmReader] = VmReader(pid)
        self._file: Optional[BinaryIO] = None

    def read(self, address: int, size: int) -> bytes:
        if size < 0 or address < 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        if size == 0:
            return b""
        data = self._read(address, size)
        if len(data) != size:
            raise MemoryReadError(address, size)
        return data

    def _read(self, address: int, size: int) -> bytes:
        if self._vm is not None:
            try:
                return self._vm.read(address, size)
            except PtraceError as error:
                if error.errno not in _REFUSED:
                    return b""  # the process is gone (ESRCH): nothing is readable
                self._vm = None
        return self._read_file(address, size)

    def _read_file(self, address: int, size: int) -> bytes:
        try:
            if self._file is None:
                self._file = open(f"/proc/{self.pid}/mem", "rb", buffering=0)
            file = self._file
            file.seek(address)
            return file.read(size) or b""
        except (OSError, OverflowError, ValueError):
            return b""

    def uses_file(self) -> bool:
        """Whether reads go through /proc/PID/mem (process_vm_readv was refused)."""
        return self._vm is None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
