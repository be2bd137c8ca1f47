"""The core's per-stop cache of each LLDB process (one per process, emptied when its
stop id changes: LLDB rebuilds frame providers at every stop, the dynamic loader's
internal stops included, and each stop's region map is read once)."""

import lldb

from ..stop.cache import StopCache, StopCaches
from .debugger import LldbProcess

CACHES = StopCaches()


def cache_for(process: "lldb.SBProcess") -> StopCache:
    """The StopCache of ``process``, checked against its current stop."""
    return CACHES.get(process.GetUniqueID(), lambda: LldbProcess(process)).process.cache
