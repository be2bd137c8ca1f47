"""The settings of jit-unwind in LLDB: the values of the core's table
(``jit_unwind.settings``, changed by the ``jit-unwind`` command), what a change does in
LLDB, and the debug log."""

import sys

from ..commands import settings

_ON_CHANGE = {}  # setting name -> callback(debugger, value) run when it is set


def on_change(name: str, callback) -> None:
    """Run ``callback(debugger, value)`` whenever ``jit-unwind NAME VALUE`` is given."""
    _ON_CHANGE[name] = callback


def changed(name: str, debugger) -> None:
    """After ``jit-unwind NAME VALUE``: what that setting does beyond its value."""
    callback = _ON_CHANGE.get(name)
    if callback is not None:
        callback(debugger, settings.value(name))


def setting(name: str) -> bool:
    return bool(settings.value(name))


def show_method() -> bool:
    return setting("show-method")


def debug_log(message) -> None:
    """Print ``message`` (a string, or a callable making one: built only when asked)
    when ``jit-unwind debug on``."""
    if settings.value("debug"):
        text = message() if callable(message) else message
        print(f"jit-unwind: {text}", file=sys.stderr)
