"""The core's debugger interface (``jit_unwind.debugger``) over GDB's objects.

Every gdb.error stays in here: methods return None, or raise DebuggerError with GDB's
message where the core shows it.  A GdbFrame lives for one stop only.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import contextlib
import re
from typing import Dict, List, Optional

import gdb

from ..debugger import DebuggerError, Frame, Process, Thread
from ..regions import Mapping
from ..elf.source_paths import shown_source_path
from ..symfile.own_files import OwnObjectFiles
from .memory import GdbMemory

# GDB 13 has no FRAME_UNWIND_FIRST_ERROR; "unavailable" is the first error in every GDB.
_FIRST_ERROR = getattr(gdb, "FRAME_UNWIND_FIRST_ERROR", gdb.FRAME_UNWIND_UNAVAILABLE)
_BACKTRACE_STOPPED = re.compile(r"^Backtrace stopped: (.+)$", re.M)
_CORE_LINE = re.compile(r"Local core dump file:\s*\n\s*`(.+?)', file type")
_INFO_SYMBOL = re.compile(r"^\S+(?: \+ (\d+))? in section ")


def gdb_stop_reason(frame) -> str:
    """Why GDB found no frame older than gdb.Frame ``frame``, in GDB's words, when that
    is an error (plain ``bt`` then ends with "Backtrace stopped: <reason>"); else ""."""
    try:
        reason = frame.unwind_stop_reason()
        if reason < _FIRST_ERROR:
            return ""
        text = gdb.frame_stop_reason_string(reason)
    except (gdb.error, RuntimeError, ValueError):  # an invalid frame, an unknown reason
        return ""
    # GDB keeps the particular message (e.g. which address it could not read) where only
    # its own backtrace prints it; the frames are cached, so this walk costs little.
    try:
        match = _BACKTRACE_STOPPED.search(
            gdb.execute("backtrace -no-filters -1", to_string=True))
        if match:
            text = match.group(1)
    except gdb.error:  # the reason stays GDB's general one
        pass
    return text


def _inside_command() -> bool:
    """GDB is inside a command that runs the selected thread (next, finish, until, a
    breakpoint's condition): a stop it handles itself, the thread still running to the
    user."""
    try:
        thread = gdb.selected_thread()
        return thread is not None and thread.is_running()
    except (gdb.error, RuntimeError):
        return False


def source_path(symtab) -> str:
    """The path shown for ``symtab`` (the core's ``shown_source_path``)."""
    try:
        full = symtab.fullname() or symtab.filename
    except gdb.error:
        full = symtab.filename
    return shown_source_path(symtab.filename, full)


class GdbFrame(Frame):
    def __init__(self, frame, level: int):
        self.inner = frame
        self._level = level
        self._sp: Optional[int] = None  # read once: bt's filter asks twice per JIT frame
        self._pc: Optional[int] = None  # py-mixed-bt asks three times per frame

    @property
    def level(self) -> int:
        return self._level

    def pc(self) -> int:
        if self._pc is None:
            try:
                self._pc = self.inner.pc()
            except gdb.error as error:  # "PC not available"
                raise DebuggerError(str(error)) from None
        return self._pc

    def sp(self) -> Optional[int]:
        if self._sp is None:
            self._sp = self.register("sp")  # GDB's name for rsp, and aarch64's sp
        return self._sp

    def function_name(self) -> Optional[str]:
        try:
            return self.inner.name()
        except gdb.error:
            return None

    def source(self):
        """The file as a normalised absolute path where GDB knows its directory (LLDB's
        adapter gives the same path for the same DWARF; GDB's ``bt`` shows the name the
        line table has, often relative to the compilation directory)."""
        try:
            sal = self.inner.find_sal()  # GDB looks a caller's line up at pc - 1 itself
            if sal.symtab is not None:
                return source_path(sal.symtab), sal.line or None
        except gdb.error:
            pass
        return None

    def register(self, name: str) -> Optional[int]:
        try:
            return int(self.inner.read_register(name))
        # gdb.error: "value has been optimized out", "PC not available"; RuntimeError: an
        # invalid frame; ValueError: a register this architecture lacks
        except (gdb.error, RuntimeError, ValueError):
            return None

    def interpreter_frame(self) -> Optional[int]:
        try:
            return int(self.inner.read_var("frame")) or None
        except (gdb.error, ValueError, RuntimeError):
            return None

    def older(self) -> Optional[Frame]:
        try:
            older = self.inner.older()
        except gdb.error as error:
            raise DebuggerError(str(error)) from None
        return GdbFrame(older, self._level + 1) if older is not None else None

    def stop_reason(self) -> str:
        return gdb_stop_reason(self.inner)


class GdbThread(Thread):
    def __init__(self, thread):
        self.inner = thread
        self.number = thread.num
        pid, lwp, _tid = thread.ptid
        self.native_id = lwp or pid
        self.name = thread.name

    def newest_frame(self) -> Frame:
        try:
            _SELECTION.before_switch()
            self.inner.switch()
            return GdbFrame(gdb.newest_frame(), 0)
        except gdb.error as error:
            raise DebuggerError(str(error)) from None


class _Selection:
    """The user's selected thread and frame, kept while a command switches threads.
    The frame is asked for only before the first switch: GDB's first unwind of a core
    just loaded costs ~30 ms, which a command that switches no thread (``py-mixed-bt
    --python-only``) never needs."""

    def __init__(self):
        self.depth = 0
        self.saved = False
        self.thread = None
        self.frame = None

    @contextlib.contextmanager
    def kept(self):
        self.depth += 1
        outermost = self.depth == 1
        if outermost:
            self.saved, self.thread, self.frame = False, None, None
        try:
            yield
        finally:
            self.depth -= 1
            if outermost and self.saved:
                self.saved = False
                self._restore()

    def before_switch(self) -> None:
        if self.depth == 0 or self.saved:
            return
        self.saved = True
        self.thread = gdb.selected_thread()
        try:
            self.frame = gdb.selected_frame()
        except gdb.error:
            self.frame = None

    def _restore(self) -> None:
        thread, frame, self.thread, self.frame = self.thread, self.frame, None, None
        if thread is not None and thread.is_valid():
            thread.switch()
        if frame is not None and frame.is_valid():
            frame.select()


_SELECTION = _Selection()


class GdbProcess(Process):
    """The selected inferior."""

    debugger_name = "GDB"

    def __init__(self):
        self.memory = GdbMemory()
        self.own_files = OwnObjectFiles()  # the symbol file we add (gdb/symfile.py)
        # (key(), whether "info proc mappings" listed them): see debugger_mappings.
        self._listing: Optional[tuple] = None

    @property
    def arch(self):
        """The selected inferior's architecture (x86-64 when GDB names another)."""
        from ..arch import X86_64, by_debugger_name
        try:
            name = gdb.selected_inferior().architecture().name()
        except (gdb.error, AttributeError, RuntimeError):
            return X86_64
        return by_debugger_name(name) or X86_64

    def pid(self) -> Optional[int]:
        pid = gdb.selected_inferior().pid
        return pid if pid > 0 else None

    def key(self) -> tuple:
        inferior = gdb.selected_inferior()
        return inferior.num, inferior.pid

    def connection(self) -> str:
        connection = getattr(gdb.selected_inferior(), "connection", None)
        return connection.type if connection is not None else ""

    def has_executable(self) -> bool:
        return gdb.current_progspace().filename is not None

    def executable_path(self) -> Optional[str]:
        return gdb.current_progspace().filename

    def sysroot(self) -> str:
        try:
            value = gdb.parameter("sysroot") or ""
        except gdb.error:
            return ""
        # "target:" is the target's own files: on a core, this machine's.
        return value[len("target:"):] if value.startswith("target:") else value

    def core_file(self) -> Optional[str]:
        if self.connection() != "core":
            return None
        corefile = getattr(gdb.selected_inferior(), "corefile", None)  # GDB 17+
        if corefile is not None:
            return corefile.filename
        try:
            match = _CORE_LINE.search(gdb.execute("info target", to_string=True))
        except gdb.error:
            return None
        return match.group(1) if match else None

    def debugger_mappings(self) -> List[Mapping]:
        """GDB's "info proc mappings" (a remote target's), asked again only while it
        answers: when a command fails inside gdb.execute, GDB 13 hands the prompt back
        (python.c re-enables stdin), and in the middle of a ``next`` (a stop GDB handles
        itself, e.g. valgrind's gdbserver, whose fake pid GDB's command refuses) the
        step went on with the prompt shown and the next command refused."""
        from ..regions.procmaps import parse_info_proc_mappings
        key = self.key()
        listing = self._listing
        if listing is not None and listing[0] == key and not listing[1]:
            return []  # it failed for this process: it would again
        if listing is None or listing[0] != key:
            if _inside_command():
                return []  # not known to answer: asked first at a stop the user sees
        try:
            mappings = parse_info_proc_mappings(gdb.execute("info proc mappings",
                                                            to_string=True))
        except gdb.error:
            self._listing = (key, False)
            return []
        self._listing = (key, True)
        return mappings

    def module_paths(self) -> List[str]:
        return [objfile.filename or "" for objfile in gdb.objfiles()]

    def separate_debug_files(self) -> Optional[Dict[str, str]]:
        # The objfiles GDB read for others (Objfile.owner): where its minimal symbols
        # come from, listed without opening a file.
        found = {}
        for objfile in gdb.objfiles():
            owner = objfile.owner
            if owner is not None and owner.filename and objfile.filename:
                found[owner.filename] = objfile.filename
        return found

    def threads(self) -> List[Thread]:
        try:
            threads = gdb.selected_inferior().threads()
        except gdb.error:
            return []
        return [GdbThread(t) for t in sorted(threads, key=lambda t: t.num)]

    def selected_thread(self) -> Optional[Thread]:
        thread = gdb.selected_thread()
        return GdbThread(thread) if thread is not None else None

    def symbol_address(self, name: str) -> Optional[int]:
        for finder in (gdb.lookup_global_symbol, gdb.lookup_static_symbol):
            try:
                symbol = finder(name)
                # Not only is_variable: GDB may class a global like _PyRuntime otherwise,
                # and any symbol whose value has an address will do.
                address = symbol.value().address if symbol is not None else None
                if address is not None:
                    return int(address)
            except (gdb.error, ValueError):
                pass
        return None

    def member_offset(self, type_name: str, member_path: str) -> Optional[int]:
        try:
            current = gdb.lookup_type(type_name).strip_typedefs()
        except gdb.error:
            return None
        offset = 0
        try:
            for member in member_path.split("."):
                fields = ({f.name: f for f in current.fields()}
                          if current.code == gdb.TYPE_CODE_STRUCT else {})
                field = fields.get(member)
                if field is None or not hasattr(field, "bitpos"):
                    return None
                offset += field.bitpos // 8
                current = field.type.strip_typedefs()
        except gdb.error:
            return None
        return offset

    def names_code(self, address: int) -> bool:
        """A function block of GDB's own at ``address``: a JIT reader's (``jit-reader-load``)
        or DWARF's.  Our symbol file's blocks (its names for GDB) never count; GDB's JIT
        interface objects without DWARF are known as registered code.  Asked again at
        every call: loading a JIT reader adds no event."""
        try:
            block = gdb.block_for_pc(address)
            for _ in range(64):  # nested blocks up to the function's, bounded
                if block is None or block.function is not None:
                    break
                block = block.superblock
            if block is None or block.function is None:
                return False
            symtab = block.function.symtab
            return symtab is None or not self.own_files.is_own(symtab.objfile.filename)
        except (gdb.error, RuntimeError):  # no program space, an invalid block
            return False

    def function_start(self, address: int) -> Optional[int]:
        """From ``info symbol`` (minimal symbols suffice); rare path."""
        try:
            text = gdb.execute(f"info symbol {address:#x}", to_string=True)
        except gdb.error:
            return None
        match = _INFO_SYMBOL.match(text)
        if match is None:
            return None
        return address - int(match.group(1) or 0)

    @contextlib.contextmanager
    def keep_selection(self):
        with _SELECTION.kept():
            yield

    def warn(self, text: str) -> None:
        gdb.write(f"warning: {text}\n", gdb.STDERR)


PROCESS = GdbProcess()
