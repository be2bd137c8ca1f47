"""The few Linux calls a live read needs, through ctypes: ``ptrace`` (seize, interrupt,
read a thread's general registers, detach) and ``process_vm_readv``.

ctypes rather than the python-ptrace package: it must work on a production host with
only our dependencies; python-ptrace has no PTRACE_SEIZE, PTRACE_INTERRUPT or
process_vm_readv (it attaches with PTRACE_ATTACH, which sends SIGSTOP, and reads memory
a word at a time), and its licence (GPL v2) is not ours (MIT)."""

import ctypes
import errno
import os
from typing import Optional

PTRACE_DETACH = 17
PTRACE_GETREGSET = 0x4204
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
NT_PRSTATUS = 1
PTRACE_EVENT_STOP = 128
WALL = 0x40000000  # __WALL: wait for threads too (not in the os module)
REGISTER_BYTES = 512  # more than any user_regs_struct (x86-64: 216, aarch64: 272)


class PtraceError(OSError):
    """A ptrace call failed: ``errno`` says why (EPERM: not allowed, ESRCH: gone)."""


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


_libc = None


def libc():
    global _libc
    if _libc is None:
        library = ctypes.CDLL(None, use_errno=True)
        library.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                                   ctypes.c_void_p]
        library.ptrace.restype = ctypes.c_long
        library.process_vm_readv.argtypes = [
            ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.POINTER(_Iovec),
            ctypes.c_ulong, ctypes.c_ulong]
        library.process_vm_readv.restype = ctypes.c_ssize_t
        _libc = library
    return _libc


def _ptrace(request: int, tid: int, address: int = 0, data: int = 0) -> int:
    result = libc().ptrace(request, tid, address, data)
    if result == -1:
        code = ctypes.get_errno()
        raise PtraceError(code, os.strerror(code))
    return result


def seize(tid: int) -> None:
    """Become ``tid``'s tracer without stopping it (no SIGSTOP is sent)."""
    _ptrace(PTRACE_SEIZE, tid)


def interrupt(tid: int) -> None:
    """Ask a seized thread to stop; :func:`wait_stopped` waits for it."""
    _ptrace(PTRACE_INTERRUPT, tid)


def stop_signal(status: int) -> Optional[int]:
    """What a wait status of a seized thread says: the signal to give back when it is
    detached (0 for the stop an interrupt asked for, or a group stop; a signal that
    arrived first must not be lost), None when the thread exited instead."""
    if not os.WIFSTOPPED(status):
        return None
    if status >> 16 == PTRACE_EVENT_STOP:  # our interrupt, or a group stop
        return 0
    return os.WSTOPSIG(status)  # a signal on its way to the thread: handed back


def registers(tid: int) -> bytes:
    """The stopped thread's general registers (NT_PRSTATUS's ``pr_reg`` layout)."""
    buffer = ctypes.create_string_buffer(REGISTER_BYTES)
    vector = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), REGISTER_BYTES)
    _ptrace(PTRACE_GETREGSET, tid, NT_PRSTATUS, ctypes.addressof(vector))
    return buffer.raw[:vector.length]


def detach(tid: int, signal: int = 0) -> bool:
    """Let ``tid`` go (giving it ``signal``); False when it was gone already."""
    try:
        _ptrace(PTRACE_DETACH, tid, 0, signal)
        return True
    except PtraceError as error:
        if error.errno == errno.ESRCH:
            return False
        raise


class VmReader:
    """process_vm_readv into one reused buffer."""

    def __init__(self, pid: int, size: int = 1 << 16):
        self.pid = pid
        self._buffer = ctypes.create_string_buffer(size)
        self._local = _Iovec(ctypes.cast(self._buffer, ctypes.c_void_p), size)
        self._remote = _Iovec(0, 0)
        self._call = libc().process_vm_readv

    def read(self, address: int, size: int) -> bytes:
        """The bytes read (fewer than ``size`` when a page cannot be read); PtraceError
        when the call itself fails (ENOSYS, EPERM: not allowed here)."""
        if size > len(self._buffer):
            self._buffer = ctypes.create_string_buffer(size)
            self._local.base = ctypes.cast(self._buffer, ctypes.c_void_p)
        self._local.length = size
        self._remote.base = address
        self._remote.length = size
        done = self._call(self.pid, ctypes.byref(self._local), 1,
                          ctypes.byref(self._remote), 1, 0)
        if done < 0:
            code = ctypes.get_errno()
            if code == errno.EFAULT:
                return b""
            raise PtraceError(code, os.strerror(code))
        return ctypes.string_at(self._buffer, done)
