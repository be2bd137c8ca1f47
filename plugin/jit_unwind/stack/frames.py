"""Native frames from a debugger's frames (``debugger.Frame``): which kind of code each
runs, its name, what our unwinder said about it, and one thread's walk.

Everything here reads the per-stop cache (``stop.cache.StopCache``) the unwinder filled, so
``bt`` and ``py-mixed-bt`` name and mark frames the same way."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..debugger import DebuggerError, Frame, Thread
from ..model import EVAL, EVAL_FUNCTION, JIT, MAX_FRAMES, OTHER, NativeFrame, Unwound
from .naming import jit_frame_name
from ..regions.nocfi_pc import function_in
from ..stop.cache import READ_ERRORS, StopCache

def unwound_by_us(frame: Frame, pc: int, cache: StopCache) -> Optional[Unwound]:
    """What our unwinder found for ``frame``; sp is read only when it saw the pc."""
    return cache.unwound_at(pc, frame.sp)


def is_guess(frame: Frame, pc: int, cache: StopCache) -> bool:
    """True when our unwinder found ``frame`` by scanning the stack."""
    guessed = cache.guessed.get(pc)
    if not guessed:
        return False
    return frame.sp() in guessed


def classify(frame: Frame, cache: StopCache) -> NativeFrame:
    """The frame's kind: an eval loop (with the interpreter frame it runs), JIT code
    (with its trace's code object), or anything else.  Never raises: a frame the
    debugger cannot read is "other"."""
    try:
        return _classify(frame, cache)
    except READ_ERRORS:
        return NativeFrame(frame.level, OTHER)


def _classify(frame: Frame, cache: StopCache) -> NativeFrame:
    name = frame.function_name()
    if name == EVAL_FUNCTION:
        return NativeFrame(frame.level, EVAL, frame.interpreter_frame(), name=name)
    try:
        pc = frame.pc()
    except DebuggerError:  # "PC not available" (a core without registers, a broken walk)
        return NativeFrame(frame.level, OTHER, name=name)
    lookup = pc if frame.level == 0 else pc - 1
    if cache.regions().jit_region_at(lookup) is None:
        return NativeFrame(frame.level, OTHER, pc=pc, name=name)
    symbol = cache.named_regions().symbol_at(lookup)
    return NativeFrame(frame.level, JIT, code_object=symbol.owner if symbol else None,
                       pc=pc, name=name)


def jit_label(frame: Frame, pc: int, cache: StopCache) -> Optional[NativeFrame]:
    """For ``bt``: the frame's JIT name and marks, or None when it is no JIT code, no
    guess, and no code without CFI we unwound, or JIT code the debugger names itself
    (a JIT reader's) and unwound itself: the debugger names it.  ``name`` is None when
    no region names it or the debugger does (the debugger's name is kept)."""
    innermost = frame.level == 0
    guess = is_guess(frame, pc, cache)
    if cache.regions().jit_region_at(pc if innermost else pc - 1) is None and not guess:
        # Code without CFI in a mapped file that our unwinder unwound: the debugger's
        # name (the file's symbol), our marks.
        unwound = unwound_by_us(frame, pc, cache)
        if unwound is None:
            return None
        return NativeFrame(frame.level, OTHER, pc=pc, name=nocfi_name(frame, pc, cache),
                           stop_reason=unwound.stop_reason, method=unwound.method)
    unwound = unwound_by_us(frame, pc, cache)
    name = None
    if not cache.process.names_code(pc if innermost else pc - 1):
        name = jit_frame_name(cache.named_regions(), pc, innermost)
    elif unwound is None and not guess:
        return None  # the debugger's own JIT code (its JIT reader's): its name, its frame
    return NativeFrame(frame.level, JIT, pc=pc, guess=guess, name=name,
                       stop_reason=unwound.stop_reason if unwound else "",
                       method=unwound.method if unwound else "")


def nocfi_name(frame: Frame, pc: int, cache: StopCache) -> Optional[str]:
    """The file's symbol for code without CFI that the debugger cannot name, None
    otherwise: a second mapping of a file's code (V8's remapped builtins) is no
    module's to it."""
    lookup = pc if frame.level == 0 else pc - 1
    region = cache.regions().nocfi_at(lookup)
    if region is None:
        return None
    function = function_in(region, lookup)
    if function is None and lookup != pc:
        # A return address a runtime planted at a function's start (V8's deoptimizer:
        # Builtins_InterpreterEnterAtNextBytecode+0): no call before it, so pc - 1 lies
        # in the padding before that function.
        function = function_in(region, pc)
        if function is not None and function.start != pc:
            function = None
    if function is None:
        return None
    known = frame.function_name()
    if known and not known.startswith(UNNAMED):
        return None
    return function.name


# LLDB's name for a function its unwind tables found but no symbol names
# (___lldb_unnamed_symbol_10f9, ___lldb_unnamed_symbol123 before LLDB 20).
UNNAMED = "___lldb_unnamed_symbol"


def library_of(address: int, cache: StopCache) -> Optional[str]:
    """The path of the object file whose mapping holds ``address`` (a library's, the
    program's), None for JIT code, unmapped memory or when none is known: what GDB's
    "?? () from LIBRARY" names for a frame without a function name."""
    try:
        mapping = cache.regions().mapping_at(address)
    except READ_ERRORS:  # the map is a bonus here
        mapping = None
    if mapping is not None:
        return mapping.path if not mapping.anonymous and mapping.path.startswith("/") \
            else None
    found = cache.process.file_address(address)  # no map of the address space: remote
    return found[0] if found is not None else None


def describe(frame: Frame, cache: StopCache) -> NativeFrame:
    """The frame as ``py-mixed-bt`` lists it: kind, name, file/line, marks.
    DebuggerError when its pc cannot be read."""
    pc = frame.pc()
    native = classify(frame, cache)
    native.pc = pc
    if native.kind == JIT:
        try:
            native.name = jit_frame_name(cache.named_regions(), pc, frame.level == 0) or native.name
        except READ_ERRORS:  # a name is a bonus; the frame stays
            pass
    if native.name is None:
        native.name = frame.function_name()
    if native.name is not None and native.name.startswith(UNNAMED):
        native.name = None  # as GDB's "??": the same listing from both debuggers
    if native.name is None:  # a second mapping of a file's code: the file's symbol
        try:
            native.name = nocfi_name(frame, pc, cache)
        except READ_ERRORS:  # an unreadable file: a name is a bonus
            pass
    if native.name is None:
        native.library = library_of(pc if frame.level == 0 else pc - 1, cache)
    source = frame.source()
    if source is not None:
        native.filename, native.line = source
    native.guess = is_guess(frame, pc, cache)
    unwound = unwound_by_us(frame, pc, cache)
    if unwound is not None:
        native.method = unwound.method
        native.stop_reason = unwound.stop_reason or ("no caller found" if unwound.ends_walk
                                                     else "")
    return native


def ended_by_unwinder(frame: Frame, cache: StopCache) -> Optional[str]:
    """Our unwinder's reason when it ended the walk at ``frame`` on purpose, else None."""
    try:
        unwound = unwound_by_us(frame, frame.pc(), cache)
    except DebuggerError:
        return None
    if unwound is None or not unwound.ends_walk:
        return None
    return unwound.stop_reason or "no caller found"


def remember_stop(frame: Frame, cache: StopCache, reason: str) -> None:
    """Keep the debugger's error for unwinding past ``frame`` for this stop."""
    try:
        cache.debugger_stops[(frame.pc(), frame.sp())] = reason
    except DebuggerError:
        pass


def remembered_stop(frame: Frame, cache: StopCache) -> str:
    """The debugger's error for unwinding past ``frame`` if a walk of this stop met it."""
    try:
        return cache.debugger_stops.get((frame.pc(), frame.sp()), "")
    except DebuggerError:
        return ""


def walk(thread: Thread, cache: StopCache) -> Tuple[List[NativeFrame], str]:
    """The thread's native frames, innermost first, and why the walk ended early: our
    unwinder's reason, or the debugger's (what GDB's ``bt`` prints as "Backtrace
    stopped: ...")."""
    frames: List[NativeFrame] = []
    try:
        frame = thread.newest_frame()
    except DebuggerError as error:
        return frames, str(error)
    while len(frames) < MAX_FRAMES:
        try:
            frames.append(describe(frame, cache))
        except DebuggerError as error:
            return frames, str(error)
        ended = ended_by_unwinder(frame, cache)
        if ended is not None:  # on GDB 13 a zero-pc frame follows: not the program's
            return frames, ended
        try:
            older = frame.older()
        except DebuggerError as error:
            return frames, str(error)
        if older is None:
            return frames, frame.stop_reason() or remembered_stop(frame, cache)
        frame = older
    return frames, f"more than {MAX_FRAMES} frames"
