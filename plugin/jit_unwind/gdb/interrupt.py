"""Ctrl-C reaches GDB through our event listeners.

While Python runs inside GDB 13, Ctrl-C is Python's KeyboardInterrupt.  GDB turns one that
leaves an unwinder, a frame filter or a command into its own "Quit", but prints and drops
one that leaves an event listener ("Python Exception <class 'KeyboardInterrupt'>"), and
when Python is entered for an event GDB moves a Ctrl-C it holds into Python, which raises
it as the listener starts.  A breakpoint whose commands continue could then not be
interrupted (GDB's testsuite, gdb.base/bp-cmds-continue-ctrl-c.exp).

Our listeners take it and set Python's interrupt flag again as their last act; GDB moves
a flag still set when Python returns to it into its own quit flag (extension.c,
restore_active_ext_lang), and quits as it would without us.  Two of Python's rules make
that possible: a subscript whose ``__getitem__`` is a builtin sets the flag without a
check after it (a call is followed by one), and a generator resumed inside ``yield from``
runs on without a check, so the listener's first check is inside its ``try``.
"""

import _thread
import functools
import signal


class _Trip:
    """``_TRIP[signal.SIGINT]`` sets Python's interrupt flag without raising it here."""

    __getitem__ = _thread.interrupt_main  # a builtin: not bound to the instance


_TRIP = _Trip()
_ONE = (None,)


def passes_interrupt(handler):
    """``handler`` for GDB's rare events (an object file, the exit): Ctrl-C during it is
    passed on to GDB (one pending as the listener starts is GDB's to lose)."""
    @functools.wraps(handler)
    def on_event(*args):
        try:
            handler(*args)
        except KeyboardInterrupt:
            _TRIP[signal.SIGINT]  # the last act: no call (and no signal check) after it
    return on_event


def on_every_event(handler):
    """A listener for GDB's frequent events (each resume, stop and prompt) that runs
    ``handler()`` and passes every Ctrl-C on to GDB, one pending as it starts included:
    a C callable (``next`` on a generator, the event its unused default) resuming a
    generator inside ``yield from``."""
    pump = _pump(handler)
    next(pump)  # to its first yield: from then on it resumes without a check
    return functools.partial(next, pump)


def _pump(handler):
    pending = False
    while True:  # bounded by GDB's events: one turn per event
        try:
            while True:
                one = iter(_ONE)
                if pending:
                    _TRIP[signal.SIGINT]  # no call between this and the yield
                    pending = False
                yield from one  # suspends; resumed, it runs on without a check
                handler()
        except KeyboardInterrupt:
            pending = True
