"""Stopping a live process's threads for as long as a read takes, and letting them go on
every path.

Each thread is seized (PTRACE_SEIZE: no signal is sent, nothing the program can see
beyond the pause) and interrupted, its registers read (PTRACE_GETREGSET NT_PRSTATUS),
and detached at the end, a signal that arrived meanwhile handed back.  A process that
was stopped (SIGSTOP, a debugger's stop) stays stopped: the kernel puts its threads
back into their group stop.  Threads made while the others are being stopped are
found by listing /proc/PID/task again until no new one appears.  If the reader itself
dies, the kernel detaches its tracees and they run on."""

import errno
import os
import signal
import struct
import time
from contextlib import contextmanager
from typing import Dict, List, Optional

from . import ptrace

MAX_ROUNDS = 64  # listings of /proc/PID/task until no thread is new: bounded
STOP_TIMEOUT = 2.0  # s for a thread to stop (one in uninterruptible sleep may not)
# The signals that end the reader: held off while threads are being stopped or let go
# (a detach must not be cut short), turned into an exception during the read itself.
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Ended(BaseException):
    """The reader was sent ``signum`` during a read: the threads are let go first."""

    def __init__(self, signum: int):
        super().__init__(f"ended by signal {signum}")
        self.signum = signum


def thread_ids(pid: int) -> List[int]:
    """The process's threads, the main thread first, then by id (GDB's order after
    attaching, and so a gcore's)."""
    try:
        tids = sorted(int(name) for name in os.listdir(f"/proc/{pid}/task") if name.isdigit())
    except OSError:
        return []
    return sorted(tids, key=lambda tid: tid != pid)


def unpack_registers(data: bytes, layout) -> Dict[str, int]:
    count = min(len(layout), len(data) // 8)
    return dict(zip(layout, struct.unpack_from(f"<{count}Q", data)))


class StoppedThreads:
    """The threads of ``pid`` this reader has seized: ``stop()`` stops them all,
    ``release()`` lets every one go.  ``stopped_for``: seconds between the first
    interrupt and the last detach."""

    def __init__(self, pid: int):
        self.pid = pid
        self.order: List[int] = []  # every thread seen, in thread_ids' order
        self.seized: List[int] = []
        self.held: Dict[int, int] = {}  # stopped thread -> the signal to hand back
        self.unstopped: List[int] = []  # seized threads that did not stop in time
        self.started = 0.0
        self.stopped_for = 0.0

    def stop(self) -> None:
        """Seize and stop every thread.  PtraceError (EPERM, ...) when the process's
        first thread cannot be seized: nothing is held then."""
        self.started = time.perf_counter()
        for _ in range(MAX_ROUNDS):
            new = [tid for tid in thread_ids(self.pid) if tid not in self.order]
            if not new:
                break
            self.order += new
            waiting = []
            for tid in new:
                try:
                    ptrace.seize(tid)
                except ptrace.PtraceError as error:
                    if error.errno == errno.ESRCH:
                        continue  # it exited since the listing
                    if not self.seized:
                        raise
                    continue
                self.seized.append(tid)
                try:
                    ptrace.interrupt(tid)
                    waiting.append(tid)
                except ptrace.PtraceError:
                    pass  # gone meanwhile
            for tid in waiting:
                self._wait(tid)

    def _wait(self, tid: int) -> None:
        deadline = time.perf_counter() + STOP_TIMEOUT
        while True:
            try:
                found, status = os.waitpid(tid, ptrace.WALL | os.WNOHANG)
            except ChildProcessError:
                return  # gone
            except InterruptedError:
                continue
            if found:
                given = ptrace.stop_signal(status)
                if given is not None:
                    self.held[tid] = given
                return
            if time.perf_counter() > deadline:
                self.unstopped.append(tid)
                return
            time.sleep(0.0001)

    def registers(self, tid: int, layout) -> Optional[Dict[str, int]]:
        """``tid``'s registers by name, None when it is not stopped or went away."""
        if tid not in self.held:
            return None
        try:
            return unpack_registers(ptrace.registers(tid), layout)
        except ptrace.PtraceError:
            return None

    def release(self) -> None:
        """Detach from every seized thread (those still on their way to the stop
        waited for first: a running tracee cannot be detached)."""
        for tid in self.unstopped:
            self._wait(tid)  # once more: detached below if it stopped by now
        for tid in self.seized:
            if tid in self.held:
                try:
                    ptrace.detach(tid, self.held[tid])
                except ptrace.PtraceError:
                    pass  # not stopped: the kernel detaches it when this reader exits
        self.seized, self.held = [], {}
        if self.started:
            self.stopped_for = time.perf_counter() - self.started


@contextmanager
def signals_held(signals=ENDING_SIGNALS):
    """``signals`` wait (blocked) while the block runs; those that came are delivered
    at its end."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextmanager
def signals_end_the_read():
    """SIGTERM, SIGHUP, SIGQUIT (and SIGINT) raise :class:`Ended` while the block runs,
    so that the threads are let go before the reader ends."""

    def ended(signum, _frame):
        raise Ended(signum)

    previous = {number: signal.getsignal(number) for number in ENDING_SIGNALS}
    for number in ENDING_SIGNALS:
        signal.signal(number, ended)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


@contextmanager
def stopped(pid: int):
    """The process's threads stopped while the block runs (a :class:`StoppedThreads`),
    let go on every path out of it: an error, an exception, a signal to the reader."""
    threads = StoppedThreads(pid)
    # A Ctrl-Z (SIGTSTP) stops the reader once the process is let go, not before: a
    # stopped reader would keep it stopped.
    with signals_held((signal.SIGTSTP,)), signals_end_the_read():
        try:
            with signals_held():
                threads.stop()
            yield threads
        finally:
            with signals_held():
                threads.release()


class OneAtATime:
    """``--nonblocking``: each thread stopped alone, just long enough to read its
    registers (microseconds), and let go before the next; the process as a whole never
    stops, and its memory is read while it runs.  Same interface as StoppedThreads'
    ``order`` and ``registers``."""

    def __init__(self, pid: int):
        self.pid = pid
        self.order: List[int] = []
        self._registers: Dict[int, bytes] = {}
        self.stopped_for = 0.0  # the longest any one thread was stopped

    def read(self) -> None:
        for tid in thread_ids(self.pid):
            self.order.append(tid)
            one = StoppedThreads(tid)
            one.order = [tid]
            with signals_held():
                try:
                    ptrace.seize(tid)
                except ptrace.PtraceError as error:
                    if error.errno == errno.ESRCH or self._registers:
                        continue
                    raise
                one.started = time.perf_counter()
                one.seized.append(tid)
                try:
                    ptrace.interrupt(tid)
                    one._wait(tid)
                    if tid in one.held:
                        self._registers[tid] = ptrace.registers(tid)
                except ptrace.PtraceError:
                    pass
                finally:
                    one.release()
            self.stopped_for = max(self.stopped_for, one.stopped_for)

    def registers(self, tid: int, layout) -> Optional[Dict[str, int]]:
        data = self._registers.get(tid)
        return unpack_registers(data, layout) if data is not None else None
