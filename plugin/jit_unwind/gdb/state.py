"""The core's per-stop cache for GDB's selected inferior, dropped on GDB's events."""

import gdb

from ..stop.cache import StopCache
from .debugger import PROCESS
from .interrupt import on_every_event


# The walk's modules (strategies, frame labels) are imported by the first frame that
# needs them, not at the stop that first finds JIT code: a session whose frames are
# all native (a JIT process stopped in its C code) never pays for them.
STATE = StopCache(PROCESS)
OWN_FILES = PROCESS.own_files  # the symbol file we add: no reason to drop STATE


def _on_new_objfile(event) -> None:
    if OWN_FILES.changes_regions(getattr(event.new_objfile, "filename", None)):
        STATE.invalidate()


def _on_free_objfile(event) -> None:
    if OWN_FILES.changes_regions(getattr(event.objfile, "filename", None)):
        STATE.invalidate()


def _on_clear_objfiles(*_args) -> None:
    if not OWN_FILES.removing:
        STATE.invalidate()


def connect_events() -> None:
    # Not "stop": nothing changes between a stop and the next resumption ("cont"),
    # and the map GDB's own stop handling built stays good for the first bt.
    # On "cont" the native code's places are kept for the next stop's first frames
    # (StopCache.known_native); a freed object file (GDB 15+) forgets them.
    gdb.events.cont.connect(on_every_event(STATE.resumed))  # Ctrl-C stays GDB's
    clear_objfiles = getattr(gdb.events, "clear_objfiles", None)
    if clear_objfiles is not None:
        clear_objfiles.connect(_on_clear_objfiles)
    for name in ("exited", "memory_changed", "register_changed", "inferior_call",
                 "new_inferior", "inferior_deleted"):
        registry = getattr(gdb.events, name, None)
        if registry is not None:
            registry.connect(STATE.invalidate)
    gdb.events.new_objfile.connect(_on_new_objfile)
    free_objfile = getattr(gdb.events, "free_objfile", None)
    if free_objfile is not None:
        free_objfile.connect(_on_free_objfile)
