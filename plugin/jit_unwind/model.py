"""The records the core passes around, in one place: where code is (``Mapping``,
``Region``), how a frame was unwound (``Unwound``), a native frame (``NativeFrame``),
the Python side (``PyFrame``, ``PyThread``, ``PyInterpreter``), and a thread's mixed
stack (``MixedFrame``, ``MixedThread``, ``Merged``); what the native step found for a
frame (``Caller``, ``Ending``) and the limits every walk shares (``MAX_FRAMES``).
Their kinds, sources and methods are enums whose values are the strings users see
(``info jit-regions``, ``[via ...]``, JSON).  Nothing here reads memory or knows a
debugger: records can be kept, compared and printed."""

from __future__ import annotations  # annotations unevaluated: less work at load

from .records import field, record
from enum import Enum
from typing import Dict, List, Optional, Tuple


class Text(str, Enum):
    """An enum whose members are their strings, in comparisons, f-strings and JSON."""

    __str__ = str.__str__
    # str's own, as __str__ (mypy takes the class attribute for an unbound callable).
    __format__ = str.__format__  # type: ignore[assignment]


class RegionSource(Text):
    """Where a region was learnt of."""

    MAPS = "maps"  # an anonymous executable mapping of a live process
    CORE = "core"  # an executable load segment of a core file
    PERF_MAP = "perf-map"  # an entry of /tmp/perf-PID.map
    JITDUMP = "jitdump"  # a code load record of a perf jitdump
    GDB_JIT = "gdb-jit"  # the debugger's JIT interface (in-memory ELF files)
    NOCFI = "no-cfi"  # code of a mapped file that no FDE covers
    CPYTHON_JIT = "cpython-jit"  # a CPython executor, read from the runtime


class CodeKind(Text):
    """What the code of a region is, for the unwinder."""

    FUNCTION = "function"  # its first byte starts a decodable prologue
    SHIM = "shim"  # an entry shim: a function that calls frameless code
    TRACE = "trace"  # frameless code entered through a shim (CPython's JIT traces)


class UnwindMethod(Text):
    """The strategy that found a frame's caller (``[via ...]`` with show-method on)."""

    JITDUMP_CFI = "jitdump-cfi"
    PROLOGUE = "prologue"
    PROLOGUE_SEARCH = "prologue-search"
    FRAME_POINTER = "frame-pointer"
    ENTRY_RECORD = "entry-record"
    ENTRY_RETURN = "entry-return"
    STACK_SCAN = "stack-scan"
    NONE = "none"  # no strategy could tell: the walk ends


@record(frozen=True)
class Mapping:
    """One mapping of the address space, as /proc/PID/maps or a core file shows it."""

    start: int
    end: int
    perms: str  # "r-xp" style; only r, w, x matter here
    path: str = ""
    offset: int = 0  # file offset of ``start`` for file-backed mappings

    def __init__(self, start: int, end: int, perms: str, path: str = "", offset: int = 0):
        # Written out (records.py): compiled, it was ~0.2 ms of the first stop.
        self.__dict__.update(start=start, end=end, perms=perms, path=path, offset=offset)

    @property
    def executable(self) -> bool:
        return "x" in self.perms

    @property
    def anonymous(self) -> bool:
        """True for memory no file backs: where JIT code lives."""
        path = self.path
        return (not path or path.startswith(("[anon", "/memfd:", "[heap]"))
                or path == "/dev/zero (deleted)")

    def __contains__(self, address: int) -> bool:
        return self.start <= address < self.end


@record(frozen=True)
class Region:
    """A range of executable memory ``[start, end)``.

    ``source`` says where we learnt of it (:class:`RegionSource`); ``kind`` what the
    code is (:class:`CodeKind`).
    """

    start: int
    end: int
    source: RegionSource
    name: str = ""
    # Position in its source (line of a perf map): where entries overlap, the later
    # one describes the code that is there now.
    sequence: int = field(default=0, compare=False)
    kind: CodeKind = field(default=CodeKind.FUNCTION, compare=False)
    # The runtime object the code belongs to (CPython: the code object of a JIT trace);
    # for code without CFI in a mapped file (source "no-cfi", name = the file's path),
    # the file's load bias.
    owner: int = field(default=0, compare=False)

    def __init__(self, start: int, end: int, source: RegionSource, name: str = "",
                 sequence: int = 0, kind: CodeKind = CodeKind.FUNCTION, owner: int = 0):
        # Written out (records.py): compiled, it was ~0.2 ms of the first stop.
        self.__dict__.update(start=start, end=end, source=source, name=name,
                             sequence=sequence, kind=kind, owner=owner)

    @property
    def size(self) -> int:
        return self.end - self.start

    def __contains__(self, address: int) -> bool:
        return self.start <= address < self.end


@record
class Unwound:
    """How to find the caller of one frame, and which strategy said so.

    ``caller_pc``/``caller_sp`` are the caller's registers; ``saved`` maps other register
    names to the caller's values; registers absent from it are unknown.  ``frame_start``
    is the address the frame's function starts at when known (it names the frame and
    keeps its identity stable).  ``guess`` marks results of the stack scan.  When the walk
    must end here, ``caller_pc`` is None and ``stop_reason`` says why.
    """

    method: UnwindMethod
    caller_pc: Optional[int] = None
    caller_sp: Optional[int] = None
    cfa: Optional[int] = None
    frame_start: Optional[int] = None
    saved: Dict[str, int] = field(default_factory=dict)
    guess: bool = False
    stop_reason: str = ""

    def __init__(self, method: UnwindMethod, caller_pc: Optional[int] = None,
                 caller_sp: Optional[int] = None, cfa: Optional[int] = None,
                 frame_start: Optional[int] = None, saved: Optional[Dict[str, int]] = None,
                 guess: bool = False, stop_reason: str = ""):
        # Written out (records.py): compiled, it was ~0.2 ms of the first bt through JIT code.
        self.method = method
        self.caller_pc = caller_pc
        self.caller_sp = caller_sp
        self.cfa = cfa
        self.frame_start = frame_start
        self.saved = {} if saved is None else saved
        self.guess = guess
        self.stop_reason = stop_reason

    @property
    def ends_walk(self) -> bool:
        return self.caller_pc is None


# Every walk's limits and its end, declared once: a thread's native frames (each
# reader's walk) and its Python frames (cpython/runtime.py).
MAX_FRAMES = 100_000
OUTERMOST_FUNCTIONS = frozenset(("main",))  # GDB's "backtrace past-main off"


def ends_backtrace(function_name: Optional[str]) -> bool:
    """A backtrace ends at ``main``, as GDB's ``backtrace past-main off`` ends it: every
    walk asks here, so that every reader gives the same stack."""
    return function_name in OUTERMOST_FUNCTIONS


class Ending(Enum):
    """Why the native step found no caller for a frame (``Caller.ending``)."""

    OUTERMOST = "outermost"  # a natural end: main, CFI's, a zero pc, our unwinder's own end
    NO_REGISTERS = "no-registers"  # the frame's pc or sp is not known
    INNER = "inner"  # the caller found is not above the frame (a corrupt stack)
    NO_RULE = "no-rule"  # no CFI, no exact rule, and the function keeps no frame pointer
    NO_FRAME_POINTER = "no-frame-pointer"  # the function keeps one, but it is not known
    UNREADABLE_RECORD = "unreadable-record"  # the frame record cannot be read
    NO_RETURN_ADDRESS = "no-return-address"  # the caller found has a pc of 0 to 15


class Caller:
    """What the native step found for one frame: its caller's ``registers`` (pc, sp and
    those known), else why not (``ending``); ``unwound``: what our strategies said, for
    a frame whose code they own (JIT code, code without CFI).  ``address``: the frame
    record an UNREADABLE_RECORD ending could not read.  (A plain class: made per frame.)"""

    __slots__ = ("registers", "ending", "unwound", "address")

    def __init__(self, registers: Optional[Dict[str, int]] = None,
                 ending: Optional[Ending] = None, unwound: Optional[Unwound] = None,
                 address: Optional[int] = None):
        self.registers = registers
        self.ending = ending
        self.unwound = unwound
        self.address = address

    def __repr__(self) -> str:
        return (f"Caller(registers={self.registers!r}, ending={self.ending}, "
                f"unwound={self.unwound!r})")


class FrameKind(Text):
    EVAL = "eval"  # CPython's eval loop (_PyEval_EvalFrameDefault)
    JIT = "jit"  # code in a JIT region
    OTHER = "other"


EVAL = FrameKind.EVAL
JIT = FrameKind.JIT
OTHER = FrameKind.OTHER
EVAL_FUNCTION = "_PyEval_EvalFrameDefault"  # the eval loop's native function


@record
class NativeFrame:
    """One native frame.  ``interpreter_frame``: an eval loop's ``frame`` variable
    (``_PyInterpreterFrame *``) when debug info has it; ``code_object``: for a JIT
    frame, the code object its trace was made from.  ``name`` is None when neither the
    debugger nor a JIT region names it.  ``guess``: the unwinder found this frame by a
    stack scan; ``stop_reason``: the unwinder ended the walk after this frame, and why;
    ``method``: the strategy that unwound this frame's caller; ``library``: for a frame
    without a name, the object file holding its pc."""

    level: int
    kind: FrameKind = OTHER
    interpreter_frame: Optional[int] = None
    code_object: Optional[int] = None
    pc: Optional[int] = None
    name: Optional[str] = None
    filename: Optional[str] = None
    line: Optional[int] = None
    guess: bool = False
    stop_reason: str = ""
    method: str = ""
    library: Optional[str] = None

    def __init__(self, level: int, kind: FrameKind = OTHER,
                 interpreter_frame: Optional[int] = None, code_object: Optional[int] = None,
                 pc: Optional[int] = None, name: Optional[str] = None,
                 filename: Optional[str] = None, line: Optional[int] = None,
                 guess: bool = False, stop_reason: str = "", method: str = "",
                 library: Optional[str] = None):
        # Written out (records.py): compiled, it was ~0.2 ms of the first bt through JIT code.
        self.level = level
        self.kind = kind
        self.interpreter_frame = interpreter_frame
        self.code_object = code_object
        self.pc = pc
        self.name = name
        self.filename = filename
        self.line = line
        self.guess = guess
        self.stop_reason = stop_reason
        self.method = method
        self.library = library

    @property
    def function(self) -> str:
        """The name to print: the frame's name, else its pc in hex."""
        if self.name:
            return self.name
        return f"{self.pc:#x}" if self.pc is not None else "??"


@record(frozen=True)
class LocalVariable:
    """One variable of a Python frame (``py-mixed-bt --locals``): ``kind`` is "local",
    "cell" (a local that inner functions share) or "free" (the enclosing function's);
    ``value`` the short text shown for it (a repr, or ``<TYPE at 0x...>``); ``type_name``
    and ``object`` are None when the object could not be read."""

    name: str
    value: str
    kind: str = "local"
    type_name: Optional[str] = None
    object: Optional[int] = None


@record(frozen=True)
class FrameLocals:
    """The bound variables of a frame, in the code object's order; ``omitted`` counts
    those past the limit; ``error`` says why none could be read."""

    variables: Tuple[LocalVariable, ...] = ()
    omitted: int = 0
    error: str = ""


@record(frozen=True)
class PyFrame:
    """One Python function activation: a ``_PyInterpreterFrame``.

    ``address`` is the ``_PyInterpreterFrame *``, the key that ties this frame to the
    native ``_PyEval_EvalFrameDefault`` frame running it.  ``is_entry`` marks the first
    frame a ``_PyEval_EvalFrameDefault`` call ran (3.11: ``frame->is_entry``; 3.12+: the
    next older record is the eval loop's shim frame); the frames from one entry frame
    inwards up to the next entry frame share one native eval-loop frame.  ``owner`` is
    ``thread``, ``generator`` or ``frame-object``.  ``instr_address`` is 3.11/3.12's
    ``prev_instr`` or 3.13+'s ``instr_ptr``.  When the code object cannot be read,
    ``function`` is ``"<unknown>"`` and ``error`` says why.
    """

    address: int
    function: str
    filename: str
    line: Optional[int]
    is_entry: bool
    owner: str
    code_address: int
    instr_address: int
    name: str = ""
    firstlineno: Optional[int] = None
    error: str = ""
    # read only when asked for (py-mixed-bt --locals): None otherwise
    locals: Optional[FrameLocals] = field(default=None, compare=False)

    @property
    def location(self) -> str:
        """``file:line``, or just the file name when the line is unknown."""
        return self.filename if self.line is None else f"{self.filename}:{self.line}"

    def __str__(self) -> str:
        if self.error:
            return f"<unknown Python frame at {self.address:#x}: {self.error}>"
        return f"{self.function} ({self.location})"


@record(frozen=True)
class PyThread:
    """A ``PyThreadState`` and its Python frames, innermost first.

    ``thread_id`` is ``threading.get_ident()`` (the ``pthread_t``), ``native_thread_id``
    ``threading.get_native_id()`` (the LWP a debugger shows; None when not set yet).
    ``holds_gil`` is None when the GIL state could not be read.  ``stop_reason`` is empty
    when ``frames`` reaches the outermost frame, else it says why the walk stopped
    (unreadable memory, a loop, the frame limit).  ``name`` is left to adapters (e.g. from
    /proc/PID/task/TID/comm).  ``state`` is what a free-threaded build publishes of the
    thread: "attached" (may run Python now) or "detached"; None in GIL builds."""

    address: int
    interpreter_id: int
    thread_id: int
    native_thread_id: Optional[int]
    holds_gil: Optional[bool]
    frames: Tuple[PyFrame, ...]
    stop_reason: str = ""
    name: Optional[str] = None
    state: Optional[str] = None

    def eval_loop_groups(self) -> List[Tuple[PyFrame, ...]]:
        """``frames`` cut after each entry frame: one group per ``_PyEval_EvalFrameDefault``
        call, innermost first (a cut-off chain may end with a group without entry)."""
        groups: List[Tuple[PyFrame, ...]] = []
        current: List[PyFrame] = []
        for frame in self.frames:
            current.append(frame)
            if frame.is_entry:
                groups.append(tuple(current))
                current = []
        if current:
            groups.append(tuple(current))
        return groups


@record(frozen=True)
class PyInterpreter:
    """A ``PyInterpreterState``: ``id`` 0 is the main interpreter."""

    address: int
    id: int
    threads: Tuple[PyThread, ...]
    stop_reason: str = ""


@record
class MixedFrame:
    native: NativeFrame
    python: List[PyFrame] = field(default_factory=list)


@record
class MixedThread:
    """``number`` and ``name`` are the debugger's; ``python`` is None for a thread that
    runs no Python code.  ``stop_reason`` says why the native walk ended early."""

    number: int
    lwp: int
    name: Optional[str]
    python: Optional[PyThread]
    python_name: Optional[str] = None
    frames: List[MixedFrame] = field(default_factory=list)
    unclaimed: List[PyFrame] = field(default_factory=list)
    stop_reason: str = ""
    python_missing: bool = False  # its Python state is not in the dump (the note says)


@record
class Merged:
    """Python frames per native frame level, and what no native frame claimed."""

    by_level: Dict[int, List[PyFrame]] = field(default_factory=dict)
    unclaimed: List[PyFrame] = field(default_factory=list)
    matched_by_pointer: int = 0
    matched_by_count: int = 0
