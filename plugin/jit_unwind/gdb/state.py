"""The core's per-stop cache for GDB's selected inferior, dropped on GDB's events."""

import gdb

from ..session import StopCache
from .debugger import PROCESS

STATE = StopCache(PROCESS)


def connect_events() -> None:
    # Not "stop": nothing changes between a stop and the next resumption ("cont"),
    # and the map GDB's own stop handling built stays good for the first bt.
    # On "cont" the native code's places are kept for the next stop's first frames
    # (StopCache.known_native); a freed object file (GDB 15+) forgets them.
    gdb.events.cont.connect(STATE.resumed)
    for name in ("new_objfile", "free_objfile", "clear_objfiles", "exited",
                 "memory_changed", "inferior_call", "new_inferior", "inferior_deleted"):
        registry = getattr(gdb.events, name, None)
        if registry is not None:
            registry.connect(STATE.invalidate)
