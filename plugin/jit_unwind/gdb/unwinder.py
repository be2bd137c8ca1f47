"""The GDB unwinder: hands JIT frames to the core (``native_step``), nothing else.

Its fast path matters more than anything here: GDB asks every Python unwinder about
every frame, so for a pc outside JIT code we return None after one register read and a
binary search.
"""

import gdb
from gdb.unwinder import Unwinder

from ..arch import by_debugger_name
from ..target import JitUnwindError
from ..regions.nocfi import SOURCE as NOCFI
from .log import debug_log
from .state import STATE
from .symfile import STOPS_CONNECTED, connect_stops


_CORE = []


def _core():
    """The core's native_step module, imported once JIT code is met (not at load: it
    loads every strategy; state.py imports it at the stop that first finds JIT code)."""
    if not _CORE:
        from ..unwind import native_step
        _CORE.append(native_step)
    return _CORE[0]


def _text_pc_sp(pending_frame):
    """(pc, sp) from a pending frame's text "SP=0x…,PC=0x…", None when it says otherwise.
    GDB computes and keeps that pc for the frame anyway, where ``read_register("rip")``
    computed it again (1-2 µs of the ~3 a register read costs, for every frame of every
    backtrace), and the sp comes without a second read."""
    try:
        sp_text, separator, pc_text = str(pending_frame).partition(",PC=")
        if separator and sp_text.startswith("SP="):
            return int(pc_text, 16), int(sp_text[3:], 16)
    except (gdb.error, ValueError):  # e.g. sp unavailable while the pc is not
        pass
    return None


def _pc_and_sp(pending_frame):
    """(pc, sp) of a pending frame on GDB 13, which has no PendingFrame.pc(); sp None
    when only the register read gives the pc."""
    found = _text_pc_sp(pending_frame)
    return found if found is not None else (int(pending_frame.read_register("pc")), None)


def _sp(pending_frame) -> int:
    """sp of a pending frame, from its text (cheaper than a register read on GDB 18 too)."""
    found = _text_pc_sp(pending_frame)
    return found[1] if found is not None else int(pending_frame.read_register("sp"))


def _stale_frames():
    """The interpreter frames an eval loop's registers may hold stale copies of (for a
    shim's result), None when not known."""
    from .python_frames import python_thread
    try:
        thread = python_thread()
        if thread is None:
            return None
        return _core().stale_frames(STATE, thread)
    # The shim's own unwind stands without this refinement: the runtime's memory cannot
    # be read (JitUnwindError), or GDB's thread is gone (gdb.error, RuntimeError).
    except (JitUnwindError, gdb.error, RuntimeError) as error:
        debug_log(f"stale frames not known: {error!r}")
        return None


class _FrameId:
    """GDB 13's frame id: any object with ``sp`` and ``pc`` gdb.Values."""

    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class JitUnwinder(Unwinder):
    def __init__(self):
        super().__init__("jit-unwind")
        self._has_pc = hasattr(gdb.PendingFrame, "pc")
        self._frame_id_class = getattr(gdb.unwinder, "FrameId", None)
        # The last architecture asked about, and ours for it (None: one we do not
        # unwind): GDB keeps one gdb.Architecture object per architecture.
        self._gdb_arch = None
        self._arch = None

    def _architecture(self, gdb_arch):
        if gdb_arch is not self._gdb_arch:
            self._arch = by_debugger_name(gdb_arch.name())
            self._gdb_arch = gdb_arch
        return self._arch

    def __call__(self, pending_frame):
        try:
            return self._unwind(pending_frame)
        except Exception as error:  # GDB calls in: never break its own unwinding
            debug_log(f"unwinder error: {error!r}")
            return None

    def _unwind(self, pending_frame):
        sp = None
        if self._has_pc:
            pc = pending_frame.pc()
        else:
            pc, sp = _pc_and_sp(pending_frame)
        if STATE.known_native(pc):  # after a step: no need to read the mappings again
            return None
        if pc in STATE.unwound_pcs:  # one set look-up: a frame we unwound this stop
            ended = self._ended_walk(pending_frame, pc, sp)
            if ended is not None:
                return ended
        # GDB asks about every frame of every program: one lookup, memoized per address
        # (JIT code? code of a mapped file without CFI?).  Every program has some code
        # without CFI (libc's clone, ld.so's entry, gcc's crtstuff), so no per-process
        # flag can skip it.
        innermost = pending_frame.level() == 0
        lookup = pc if innermost else pc - 1
        code = STATE.regions().code_at(lookup)
        if STATE.has_jit and not STOPS_CONNECTED[0]:
            connect_stops()  # the symbol file's refresh at stops, from this stop on
        if code is None:
            return None
        core = _core()
        if core.leaves_to_debugger(STATE, code, lookup):
            return None
        arch = self._architecture(pending_frame.architecture())
        if arch is None:
            return None
        if sp is None:
            sp = _sp(pending_frame)

        read = {}  # name -> (gdb.Value, int) of the registers the strategies read

        def read_register(name):
            try:
                value = pending_frame.read_register(name)
                number = int(value)
            # gdb.error: "value is not available"; ValueError: a register GDB does not know
            except (gdb.error, ValueError):
                return None
            read[name] = (value, number)
            return number

        result = core.unwind_code(STATE, code, pc, sp, read_register, innermost,
                                  _stale_frames, arch)
        if code.source == NOCFI:
            debug_log(lambda: f"frame #{pending_frame.level()} pc={pc:#x} sp={sp:#x} "
                              f"(no CFI in {code.name}): {result or 'left to GDB'}")
        elif result is not None:
            debug_log(lambda: f"frame #{pending_frame.level()} pc={pc:#x} sp={sp:#x}: "
                              f"{result}")
        if result is None:  # GDB's rules stand where ours are not exact
            return None
        return self._unwind_info(pending_frame, result, sp, pc, read, arch)

    def _ended_walk(self, pending_frame, pc, sp):
        """The unwind info of a frame whose walk we ended this stop, asked again (GDB
        flushed its frames) or, on GDB 13, asked about its echo (see _unwind_info);
        None for any other frame."""
        if sp is None:
            sp = _sp(pending_frame)
        known = STATE.unwound_at(pc, lambda: sp)
        if known is None or not known.ends_walk:
            return None
        arch = self._architecture(pending_frame.architecture())
        return None if arch is None else self._unwind_info(pending_frame, known, sp, pc,
                                                           {}, arch)

    def _unwind_info(self, pending_frame, result, sp, pc, read, arch):
        """``read``: name -> (gdb.Value, int) of the registers the strategies read."""
        id_sp = result.cfa if result.cfa is not None else sp
        id_pc = result.frame_start if result.frame_start is not None else pc
        # A Python int becomes a 64-bit gdb.Value (long, or unsigned long long when
        # larger), the size of every x86-64 register GDB checks it against; a .cast()
        # to uint64 on top cost ~2.5 µs per register on GDB 13.
        value = gdb.Value
        if self._frame_id_class is not None:
            frame_id = self._frame_id_class(id_sp, id_pc)
        else:
            frame_id = _FrameId(value(id_sp), value(id_pc))
        info = pending_frame.create_unwind_info(frame_id)
        add = info.add_saved_register
        if result.ends_walk:
            if self._has_pc:
                return info  # no saved pc: GDB ends the backtrace at this frame
            # GDB 13 raises "PC not saved" for a frame without a saved pc (in bt, up,
            # finish), and a zero pc would make up a frame "#1 0x0" that up and frame
            # select.  Its echo instead: a caller at this frame's own pc and sp, which
            # GDB asks us about (_ended_walk) and which gets this frame's id, so GDB
            # drops it ("previous frame identical to this frame") and this frame is the
            # outermost, as on GDB 14+.
            add(arch.pc, value(pc))
            add(arch.sp, value(sp))
            return info
        add(arch.pc, value(result.caller_pc))
        add(arch.sp, value(result.caller_sp))
        for name, saved in result.saved.items():
            # A register passed through unchanged: GDB's own value, no new one.
            known = read.get(name)
            add(name, known[0] if known is not None and known[1] == saved else value(saved))
        return info
