"""Plain data shared by the core: JIT regions and unwind results."""

from dataclasses import dataclass, field
from typing import Dict, Optional


@dataclass(frozen=True)
class Region:
    """A range of executable memory ``[start, end)``.

    ``source`` says where we learnt of it: ``maps`` (an anonymous executable mapping of
    a live process), ``core`` (an executable load segment of a core file), ``perf-map``
    (an entry of /tmp/perf-PID.map), ``jitdump`` (a code load record of a perf jitdump),
    ``gdb-jit`` (GDB's JIT interface), ``no-cfi`` (code of a mapped file that no FDE
    covers).
    """

    start: int
    end: int
    source: str
    name: str = ""
    # Position in its source (line of a perf map): where entries overlap, the later
    # one describes the code that is there now.
    sequence: int = field(default=0, compare=False)
    # "function": code whose first byte starts a decodable prologue; "shim": an entry
    # shim (a function that calls frameless code); "trace": frameless code entered
    # through a shim, whose start is no prologue (CPython's JIT traces).
    kind: str = field(default="function", compare=False)
    # The runtime object the code belongs to (CPython: the code object of a JIT trace);
    # for code without CFI in a mapped file (source "no-cfi", name = the file's path),
    # the file's load bias.
    owner: int = field(default=0, compare=False)

    @property
    def size(self) -> int:
        return self.end - self.start

    def __contains__(self, address: int) -> bool:
        return self.start <= address < self.end


@dataclass
class Unwound:
    """How to find the caller of one frame, and which strategy said so.

    ``caller_pc``/``caller_sp`` are the caller's registers; ``saved`` maps other register
    names to the caller's values; registers absent from it are unknown.  ``frame_start``
    is the address the frame's function starts at when known (it names the frame and
    keeps its identity stable).  ``guess`` marks results of the stack scan.  When the walk
    must end here, ``caller_pc`` is None and ``stop_reason`` says why.
    """

    method: str
    caller_pc: Optional[int] = None
    caller_sp: Optional[int] = None
    cfa: Optional[int] = None
    frame_start: Optional[int] = None
    saved: Dict[str, int] = field(default_factory=dict)
    guess: bool = False
    stop_reason: str = ""

    @property
    def ends_walk(self) -> bool:
        return self.caller_pc is None
