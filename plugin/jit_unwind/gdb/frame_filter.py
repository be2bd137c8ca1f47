"""Name JIT frames in ``bt`` (and DAP stack traces), say how they were unwound, and add
the Python frames each native frame runs as its elided frames.

The filter is enabled only while the process has JIT code or a CPython runtime: with no
enabled filter GDB prints frames natively, which is faster, so other processes pay
nothing.

Once a filter is enabled GDB prints every frame through it, and that printing differs
from plain ``bt``: a frame without a name prints as ``in  ()`` (GDB 13) or ``in ???
()`` (GDB 18), an argument whose memory is unreadable raises instead of printing
``<error reading variable: ...>`` and ends the whole backtrace, any gdb.error of a
decorator does the same, and the ``Backtrace stopped: ...`` line is never printed.
Every frame therefore goes through NativeFrameDecorator, which gives plain GDB's text
and never lets an error out, and the last frame of a walk that ended early carries
GDB's reason as ``[unwind stopped: ...]``, as frames our unwinder could not unwind do.

One difference no decorator can remove: a frame without line information shows its
library as ``at LIB`` where plain ``bt`` says ``from LIB``.  GDB's printer of filtered
frames (py-framefilter.c) writes " at " before any filename and has no "from"; a
filename of None would drop the library, which is what tells runtime code (``?? ()
at libruby.so``) from JIT code (``?? ()``).
"""

import sys

import gdb
from gdb.FrameDecorator import FrameDecorator, FrameVars

from ..commands import settings
from ..debugger import DebuggerError
from .debugger import GdbFrame, gdb_stop_reason
from .log import debug_log
from .state import STATE


# The core's bt rules, bound when a backtrace first runs through the filter: the
# plugin's load (GDB's start-up) does not need them.
bt_decoration = filtered_walk = None


def _load_core() -> None:
    global bt_decoration, filtered_walk
    if filtered_walk is None:
        from ..stack.bt_walk import filtered_walk
        from ..stack.frame_label import bt_decoration


class NativeFrameDecorator(FrameDecorator):
    """One native frame as plain GDB would print it, or with ``name`` (a JIT frame's)
    instead of its function's name, and ``note`` after the name.

    ``frame``: the gdb.Frame when ``base`` is GDB's own FrameDecorator of it (no filter
    decorated the frame before ours, the usual case).  Then each method asks the frame
    itself what GDB's FrameDecorator would ask it, once: GDB calls six or seven methods
    per printed frame, and FrameDecorator's chain of ``hasattr`` and repeated
    ``find_sal()`` calls cost as much as unwinding the frame."""

    python_frames = ()  # the [py] frames it runs, as elided frames (python_frames.py)

    def __init__(self, base, name=None, note: str = "", pc_unavailable: bool = False,
                 frame=None):
        self._base = base  # FrameDecorator.__init__'s only work
        self._name = name
        self._note = note
        self._pc_unavailable = pc_unavailable
        self._gdb_frame = frame
        self._sal = None  # frame.find_sal(), once asked
        self._type = None  # frame.type(), once asked

    def with_note(self, note: str) -> "NativeFrameDecorator":
        return NativeFrameDecorator(self._base, self._name,
                                    f"{self._note} {note}" if self._note else note,
                                    self._pc_unavailable, self._gdb_frame)

    def inferior_frame(self):
        frame = self._gdb_frame
        return frame if frame is not None else self._base.inferior_frame()

    def elided(self):
        base = None if self._gdb_frame is not None else super().elided()
        if not self.python_frames:
            return base
        return iter([*(base or ()), *self.python_frames])

    def function(self):
        name = self._name if self._name is not None else plain_name(self._base)
        if self._note:
            name = f"{name} {self._note}"
        if self._pc_unavailable and "gdb.dap" not in sys.modules:
            name = f"<unavailable> in {name}"  # plain GDB: "#0  <unavailable> in ?? ()"
        return name

    def address(self):
        try:
            frame = self._gdb_frame
            return frame.pc() if frame is not None else super().address()
        except (gdb.error, RuntimeError):  # "PC not available", an invalid frame
            # GDB's DAP server needs an address for every frame of a stackTrace.
            return 0 if "gdb.dap" in sys.modules else None

    def filename(self):
        try:
            frame = self._gdb_frame
            if frame is None:
                return super().filename()
            symtab = self._find_sal().symtab
            if not symtab or not symtab.filename:
                return gdb.solib_name(frame.pc())
            return symtab.filename
        except (gdb.error, RuntimeError):  # no symtab, an invalid frame
            return None

    def line(self):
        try:
            if self._gdb_frame is None:
                return super().line()
            if self._limited():
                return None
            sal = self._find_sal()
            return sal.line if sal else None
        except (gdb.error, RuntimeError):  # no symtab, an invalid frame
            return None

    def frame_args(self):
        if self._gdb_frame is None:
            return _checked(self, super().frame_args)
        return _checked(self, lambda: self._variables(FrameVars.fetch_frame_args))

    def frame_locals(self):
        if self._gdb_frame is None:
            return _checked(self, super().frame_locals)
        return _checked(self, lambda: self._variables(FrameVars.fetch_frame_locals))

    # GDB's FrameDecorator, for a gdb.Frame, read once ---------------------------------

    def _find_sal(self):
        sal = self._sal
        if sal is None:
            sal = self._sal = self._gdb_frame.find_sal()
        return sal

    def _frame_type(self):
        kind = self._type
        if kind is None:
            kind = self._type = self._gdb_frame.type()
        return kind

    def _limited(self) -> bool:
        """FrameDecorator's "special or limited" frame: no variables, no line."""
        symtab = self._find_sal().symtab
        return (not symtab or not symtab.filename
                or self._frame_type() in (gdb.DUMMY_FRAME, gdb.SIGTRAMP_FRAME))

    def _variables(self, fetch):
        """The arguments or locals GDB's FrameDecorator lists (its own FrameVars, so
        each GDB version's rules hold)."""
        if self._limited():
            return None
        return fetch(FrameVars(self._gdb_frame))


def plain_name(base) -> str:
    """The name plain GDB's ``bt`` prints for a frame: its function, else ``??``.

    GDB 13's FrameDecorator returns the pc for a frame without debug information (GDB
    then looks a minimal symbol up at that pc, and prints nothing without one), GDB 18's
    returns "???"; plain ``bt`` asks for the frame's function name, minimal symbols
    included, and prints ``??`` without one."""
    try:
        name = base.function()
    except (gdb.error, RuntimeError):  # no symbol, an invalid frame
        name = None
    if isinstance(name, str) and name != "???":
        return name
    try:
        frame = base.inferior_frame() if hasattr(base, "inferior_frame") else base
        name = frame.name()
    except (gdb.error, RuntimeError):  # no symbol, an invalid frame
        name = None
    return name or "??"


def _checked(decorator, fetch):
    """The arguments or locals of a frame, each read once to see that GDB can print it."""
    try:
        items = fetch()
        if items is None:
            return None
        frame = decorator.inferior_frame()
        return [_checked_variable(frame, item) for item in items]
    except Exception as error:  # GDB calls in (frame_args, frame_locals): an error ends bt
        debug_log(f"frame variables: {error!r}")
        return None


def _checked_variable(frame, item):
    """``item`` (GDB's "Symbol/Value" interface) as it is when GDB can read its value,
    so GDB reads and prints it as plain ``bt`` does (entry values included).  When it
    cannot, GDB's printing of filtered frames would raise and end the backtrace; the
    value becomes GDB's own message as a string instead, which GDB shows as ``...``
    (not a scalar) under the default ``set print frame-arguments scalars`` and in full
    with ``all``."""
    try:
        value = item.value() if hasattr(item, "value") else None
    except (gdb.error, RuntimeError, ValueError):  # the item's own: the item's at printing
        return CheckedVariable(frame, item)
    try:
        if value is None:
            symbol = item.symbol()
            if not isinstance(symbol, gdb.Symbol):
                return item
            frame.read_var(symbol).fetch_lazy()
        elif isinstance(value, gdb.Value):
            value.fetch_lazy()
    # gdb.error (gdb.MemoryError among them): unreadable; ValueError: read_var's "not
    # found"; RuntimeError: an invalid frame
    except (gdb.error, RuntimeError, ValueError) as error:
        return _WithValue(item, gdb.Value(f"<error reading variable: {error}>"))
    return item


class _WithValue:
    """``item`` (its symbol) with a given value: GDB's message for a variable GDB cannot
    read, or a value already fetched."""

    def __init__(self, item, value):
        self._item = item
        self._value = value

    def symbol(self):
        return self._item.symbol()

    def value(self):
        return self._value


class CheckedVariable:
    """A variable whose own ``value()`` raised: checked again when GDB asks (see
    _checked_variable)."""

    def __init__(self, frame, item):
        self._frame = frame
        self._item = item

    def symbol(self):
        return self._item.symbol()

    def value(self):
        value = self._item.value() if hasattr(self._item, "value") else None
        checked = _checked_variable(self._frame, _WithValue(self._item, value))
        return checked.value()


def decorate(decorator):
    """``decorator`` as a NativeFrameDecorator, named when it is a JIT frame, and whether
    our unwinder ended the walk at it."""
    try:
        return _decorate(decorator)
    except Exception as error:  # GDB calls in (bt's frames): never lose a frame over a name
        debug_log(f"frame filter error: {error!r}")
        return NativeFrameDecorator(decorator), False


def _decorate(decorator):
    # GDB's own FrameDecorator of a gdb.Frame (no other filter ran before ours).
    plain = type(decorator) is FrameDecorator and type(decorator._base) is gdb.Frame
    gdb_frame = decorator._base if plain else decorator.inferior_frame()
    frame = gdb_frame if plain else None
    try:
        pc = gdb_frame.pc()
    except gdb.error:  # "PC not available": nothing to name
        return NativeFrameDecorator(decorator, pc_unavailable=True, frame=frame), False
    label, ends_walk = bt_decoration(lambda: GdbFrame(gdb_frame, gdb_frame.level()), pc,
                                     STATE, settings.value("show-method"))
    name = label.text(lambda: plain_name(decorator)) if label is not None else None
    return NativeFrameDecorator(decorator, name, frame=frame), ends_walk


class JitFrameFilter:
    """Frame filter "jit-unwind": names JIT frames, marks guesses, adds Python frames."""

    name = "jit-unwind"
    priority = 100

    def __init__(self):
        self._enabled = True

    @property
    def enabled(self):
        if not self._enabled:
            return False
        try:
            from ..stack.decoration_gate import thread_needs_decorating
            return thread_needs_decorating(STATE, _selected_thread_key, _newest_frame,
                                           settings.value("show-method"))
        except Exception:  # GDB calls in (every bt asks): never an error before the frames
            return False

    @enabled.setter
    def enabled(self, value):  # "enable/disable frame-filter" sets this
        self._enabled = bool(value)

    def filter(self, frame_iter):
        # The CPython model only once a backtrace needs it: not at the plugin's load.
        from ..regions.core_notes import missing_executable
        frames = walk(frame_iter)
        try:
            # A core without its executable: GDB's frames are stack words, no place for
            # Python frames (say_once has said how to give the executable).  A process
            # that cannot run CPython (node, HotSpot) imports no CPython model (~8 ms).
            thread = None
            if not missing_executable(STATE.process) and STATE.may_run_python():
                from .python_frames import python_thread
                thread = python_thread()
        except Exception as error:  # GDB calls in: Python frames never cost the native ones
            debug_log(f"cannot read Python frames: {error!r}")
            thread = None
        if thread is None or not thread.frames:
            return frames
        from .python_frames import interleave
        return interleave(frames, thread)


def _selected_thread_key():
    thread = gdb.selected_thread()
    return thread.num if thread is not None else None


def _newest_frame() -> GdbFrame:
    try:
        return GdbFrame(gdb.newest_frame(), 0)
    except gdb.error as error:
        raise DebuggerError(str(error)) from None


def walk(frame_iter):
    """GDB's frames, decorated, up to where the walk ends (the core's rules), the last
    frame saying why when GDB could not go on."""
    _load_core()
    return filtered_walk(_frames(frame_iter), STATE, decorate, _frame_after, _core_frame,
                         _stop_reason, NativeFrameDecorator.with_note)


def _frames(frame_iter):
    """GDB's frame iterator, its error (GDB could not unwind the next frame: GDB 13's
    frame without a saved pc) as the core's DebuggerError."""
    while True:
        try:
            item = next(frame_iter)
        except StopIteration:
            return
        except (gdb.error, RuntimeError) as error:
            raise DebuggerError(str(error) or type(error).__name__) from None
        yield item


def _core_frame(decorator) -> GdbFrame:
    try:
        frame = decorator.inferior_frame()
        return GdbFrame(frame, frame.level())
    except (gdb.error, RuntimeError) as error:  # an invalid frame
        raise DebuggerError(str(error)) from None


def _stop_reason(decorator) -> str:
    return gdb_stop_reason(decorator.inferior_frame())


def _frame_after(decorator):
    """The frame older than ``decorator``'s (the newest frame without one), or None."""
    try:
        if decorator is None:
            frame = gdb.newest_frame()
        else:
            frame = decorator.inferior_frame().older()
        return FrameDecorator(frame) if frame is not None else None
    except (gdb.error, RuntimeError):  # "No stack.", an unwind error, an invalid frame
        return None
