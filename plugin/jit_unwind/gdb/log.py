"""``set jit-unwind debug on``: the debug log in GDB, which every module of the adapter
writes to."""

import gdb

from ..commands import settings


def debug_log(message) -> None:
    """Print ``message`` (a string, or a callable making one: built only when asked)
    when ``set jit-unwind debug on``."""
    if settings.value("debug"):
        text = message() if callable(message) else message
        gdb.write(f"jit-unwind: {text}\n")
