"""Wait until LLDB has reprinted each thread's frame 0 after a provider change.

Adding or removing a frame provider tells every thread of the target that its stack
changed, and LLDB's event thread (``dbg.evt-handler``, the driver's) reprints each
thread's frame 0 through the provider.  LLDB 23 lists a thread's frames holding its
frame-list lock and then, inside our provider, wants the target's API lock; a command
on the main thread (``lldb -b -c CORE -o 'command script import …' -o bt``) holds the
API lock and wants the frame-list lock: both wait for ever.  So the main thread that
changed the provider waits, bounded, until the event thread's answers stop coming."""

import contextlib
import os
import threading
import time

EVENT_THREAD = "dbg.evt-handler"
QUIET = 0.05  # seconds without an answer after the last expected one
LONGEST = 10.0  # never wait longer than this, whatever the event thread does
PATIENCE = 1.0  # seconds without any answer before giving up

_answers = 0
_last_answer = 0.0
_lock = threading.Lock()


def note_answer() -> None:
    """The provider answered a frame on a thread other than the main one."""
    global _answers, _last_answer
    if threading.current_thread() is threading.main_thread():
        return
    with _lock:
        _answers += 1
        _last_answer = time.monotonic()


def _event_thread_running() -> bool:
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                if comm.read().strip() == EVENT_THREAD:
                    return True
        except OSError:
            continue
    return False


@contextlib.contextmanager
def reprints_waited(thread_count: int):
    """Around a provider change on a target with ``thread_count`` threads."""
    if (thread_count <= 0 or threading.current_thread() is not threading.main_thread()
            or not _event_thread_running()):
        yield
        return
    before = _answers
    yield
    start = time.monotonic()
    while True:
        now = time.monotonic()
        with _lock:
            answered, last = _answers - before, _last_answer
        if answered >= thread_count and now - last >= QUIET:
            return
        if now - start >= LONGEST or now - max(last, start) >= PATIENCE:
            return
        time.sleep(0.005)
