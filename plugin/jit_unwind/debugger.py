"""What the core asks of a debugger: a process, its threads, their frames.

Plain base classes in the spirit of pwndbg's ``pwndbg/dbg``: each adapter (``gdb/``,
later ``lldb/``) wraps its debugger's objects in subclasses.  The contract of every
method is in its docstring.  A method returns None for what the debugger does not know
and never lets a debugger's own exception through; where the core needs the debugger's
words (why a stack walk ended), it raises :class:`DebuggerError` with them.  Frames are
valid until the process runs again: never keep one across stops.
"""

# Annotations unevaluated: a string one (Optional["Frame"]) is compiled at the load, and
# the first compile() of a GDB session costs ~1.7 ms (Python builds its AST types).
from __future__ import annotations

from operator import itemgetter
from typing import Dict, List, Optional, Tuple

from .arch import X86_64, Architecture
from .model import Mapping
from .records import NamedItems
from .target import JitUnwindError, Memory


class DebuggerError(JitUnwindError):
    """The debugger could not do what was asked; the message is the debugger's."""


class Symbol(NamedItems):
    """The symbol (minimal symbols suffice) holding an address: its name ("" without
    one) and its range ``[start, end)``, either end None when the debugger cannot say.
    Not a typing.NamedTuple: that compiles its fields' string annotations here (the
    session's first compile() is ~1.7 ms)."""

    __slots__ = ()
    _fields = ("name", "start", "end")

    def __new__(cls, name: str, start: Optional[int], end: Optional[int]):
        return tuple.__new__(cls, (name, start, end))

    name = property(itemgetter(0))
    start = property(itemgetter(1))
    end = property(itemgetter(2))


class Frame:
    """One native frame of a thread, as the debugger unwound it."""

    @property
    def level(self) -> int:
        """0 for the innermost frame, counting outwards."""
        raise NotImplementedError

    def pc(self) -> int:
        """The frame's pc; DebuggerError (e.g. "PC not available") when unknown."""
        raise NotImplementedError

    def sp(self) -> Optional[int]:
        """The frame's stack pointer (rsp), None when unknown."""
        return self.register("rsp")

    def function_name(self) -> Optional[str]:
        """The name of the function holding the pc (debug info or minimal symbols)."""
        raise NotImplementedError

    def source(self) -> Optional[tuple]:
        """(file name, line or None) of the pc (a caller's at pc - 1), None without."""
        raise NotImplementedError

    def register(self, name: str) -> Optional[int]:
        """The value of register ``name`` in this frame, None when not saved/unknown."""
        raise NotImplementedError

    def cfa(self) -> Optional[int]:
        """The frame's canonical frame address (its caller's sp), None when unknown.
        The base class knows none (GDB's Python API gives none)."""
        return None

    def is_artificial(self) -> bool:
        """A frame the debugger made from call-site information (a tail call): it has
        no registers of its own.  The base class knows of none."""
        return False

    def interpreter_frame(self) -> Optional[int]:
        """For CPython's eval loop: its ``frame`` variable (``_PyInterpreterFrame *``)
        when debug info has it, else None."""
        raise NotImplementedError

    def older(self) -> Optional["Frame"]:
        """The caller's frame; None at the end of the walk; DebuggerError when the
        debugger failed to unwind it."""
        raise NotImplementedError

    def stop_reason(self) -> str:
        """Why the debugger found no older frame when that was an error (what plain
        ``bt`` prints after "Backtrace stopped:"), else ""."""
        raise NotImplementedError


class Thread:
    """One thread of the process."""

    number: int  # the debugger's thread number
    native_id: int  # the kernel's thread id (LWP)
    name: Optional[str]  # the debugger's name for it

    def newest_frame(self) -> Frame:
        """The innermost frame (selecting the thread if the debugger must);
        DebuggerError when there is none."""
        raise NotImplementedError


class Process:
    """The debugged process (live, remote or a core file)."""

    memory: Memory
    debugger_name = "the debugger"  # as in "GDB's Python 3.11"
    arch: Architecture = X86_64  # the processor the program runs on
    _stop_cache = None

    @property
    def cache(self):
        """This process's per-stop cache (``stop/cache.StopCache``), the one cache of
        what a stop computes (regions, the Python runtime, what the unwinder found),
        kept until the debugger says the process ran, exited or changed: each reader
        connects its debugger's events to its ``invalidate``.  ``StopCache(process)``
        makes itself this; one per process."""
        return self._stop_cache

    @cache.setter
    def cache(self, cache) -> None:
        self._stop_cache = cache

    def pid(self) -> Optional[int]:
        """The process id, None when there is no process."""
        raise NotImplementedError

    def key(self) -> tuple:
        """Identifies the process the debugger has selected: per-stop caches made for
        another key are stale."""
        raise NotImplementedError

    def connection(self) -> str:
        """"native" (a live local process), "core" (an ELF core file), "minidump" (a
        core whose mappings the debugger lists) or anything else (remote)."""
        raise NotImplementedError

    def core_file(self) -> Optional[str]:
        """The path of the core file when the process is one, else None."""
        raise NotImplementedError

    def has_executable(self) -> bool:
        """Whether the debugger has the program's executable (for a core: it was opened
        with one, or found it).  The base class assumes so."""
        return True

    def executable_path(self) -> Optional[str]:
        """The program's file as the debugger opened it, None when unknown."""
        return None

    def sysroot(self) -> str:
        """Where the debugger looks for the target's files ("" for this machine's root):
        a core without a file list names its libraries by the target's paths."""
        return ""

    def debugger_mappings(self) -> List[Mapping]:
        """The memory mappings as the debugger lists them (remote targets); []."""
        raise NotImplementedError

    def module_paths(self) -> List[str]:
        """Paths of the object files the debugger has loaded."""
        raise NotImplementedError

    def separate_debug_files(self) -> Optional[Dict[str, str]]:
        """Path of each loaded object file -> the separate debug file the debugger read
        for it; None when the debugger does not say (the caller finds them itself)."""
        return None

    def threads(self) -> List[Thread]:
        """Every thread, by number."""
        raise NotImplementedError

    def selected_thread(self) -> Optional[Thread]:
        raise NotImplementedError

    def symbol_address(self, name: str) -> Optional[int]:
        """Address of global ``name`` from the debugger's debug info, None without."""
        raise NotImplementedError

    def member_offset(self, type_name: str, member_path: str) -> Optional[int]:
        """Byte offset of ``a.b.c`` inside struct ``type_name`` from debug info."""
        raise NotImplementedError

    def function_start(self, address: int) -> Optional[int]:
        """Start of the function (minimal symbols suffice) holding ``address``."""
        raise NotImplementedError

    def names_code(self, address: int) -> bool:
        """Whether the debugger has its own function symbols for the code at ``address``
        from a source other than ours (a JIT runtime's reader for GDB's JIT reader API,
        an object file registered with DWARF): then its names and unwinding stand.  The
        base class knows of none."""
        return False

    def symbol_at(self, address: int) -> Optional[Symbol]:
        """The symbol holding ``address``, None without one.  The base class knows none
        (GDB's Python API has no minimal symbol's range)."""
        return None

    def file_address(self, address: int) -> Optional[Tuple[str, int]]:
        """(path of the object file mapped at load address ``address``, the address in
        that file), None when no module holds it.  The base class knows none."""
        return None

    def keep_selection(self):
        """A context manager restoring the selected thread and frame on exit."""
        raise NotImplementedError

    def warn(self, text: str) -> None:
        """Print ``text`` as a warning to the user."""
        raise NotImplementedError
