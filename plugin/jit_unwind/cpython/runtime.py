"""Walk a stopped CPython runtime: interpreters, thread states, interpreter frames.

Entry point: :func:`find_runtime` (memory + a symbol lookup -> :class:`CPythonRuntime`),
then :meth:`CPythonRuntime.threads`.  The C structures walked::

    _PyRuntime.interpreters.head -> PyInterpreterState -> .next -> ...
    PyInterpreterState.threads.head -> PyThreadState -> .next -> ...
    PyThreadState -> current frame (3.11/3.12: ->cframe->current_frame; 3.13+:
        ->current_frame) -> _PyInterpreterFrame -> .previous -> ...

Frames owned by the C stack (3.12+: the shim frame each ``_PyEval_EvalFrameDefault`` call
pushes; 3.14+: also the thread's sentinel base frame) are not Python code: they are
skipped, and mark the Python frame just inside them as an entry frame.  Frames that
CPython itself hides as "incomplete" because they have not reached their first
instruction yet (3.12/3.13) are kept: a debugger should show them.  Every list is
bounded and a read that fails ends that list with a reason instead of raising.
"""

import struct
from ..records import record as _record, replace
from typing import Callable, Dict, List, Optional, Tuple

from ..target import Memory, MemoryReadError, PageCache
from .code import CodeReader
from .debug_offsets import COOKIE, layout_from_debug_offsets
from .errors import LayoutError, ObjectError, RuntimeNotFoundError, UnsupportedVersionError
from .layout import (ENTRY_SHIM_OWNER, FIRST_SHIM_OWNER, OWNER_NAMES, Layout,
                     check_supported, static_layout)
from ..model import MAX_FRAMES, PyFrame, PyInterpreter, PyThread
from .objects import StructReader, read_struct
from .version import PyVersion, VersionLike, as_version

__all__ = ["SymbolLookup", "RawFrame", "CPythonRuntime", "find_runtime",
           "read_python_threads", "read_py_version", "MAX_FRAMES"]

# A symbol lookup returns the address of a global of the inferior (``_PyRuntime``,
# ``Py_Version``) or None.  Adapters build it from the debugger's symbol tables.
SymbolLookup = Callable[[str], Optional[int]]

MAX_THREADS = 10_000
MAX_INTERPRETERS = 1_000

# PyThreadState._status bits (3.13 to 3.15): initialized:1, bound:1, unbound:1,
# bound_gilstate:1, active:1, ...; active is set on attach and cleared on detach.
_STATUS_INITIALIZED = 1 << 0
_STATUS_ACTIVE = 1 << 4


@_record(frozen=True)
class RawFrame:
    """The fields of one ``_PyInterpreterFrame`` record, tags already removed from
    ``executable``.  ``is_entry_flag`` is 3.11's ``is_entry`` (None on 3.12+)."""

    address: int
    previous: int
    executable: int
    instr_ptr: int
    owner: int
    is_entry_flag: Optional[bool] = None
    tlbc_index: int = 0  # 3.14t: which copy of the bytecode instr_ptr points into

    @property
    def is_shim(self) -> bool:
        return self.owner >= FIRST_SHIM_OWNER or self.owner < 0


def read_py_version(memory: Memory, lookup: SymbolLookup) -> Optional[PyVersion]:
    """``Py_Version`` (``const unsigned long``, CPython 3.11+), None when absent."""
    address = lookup("Py_Version")
    value = memory.try_read_u64(address) if address else None
    if value is None or (value >> 24) & 0xFF != 3:
        return None
    return PyVersion.from_hex(value)


def find_runtime(memory: Memory, lookup: SymbolLookup,
                 version: Optional[VersionLike] = None,
                 max_frames: int = MAX_FRAMES) -> "CPythonRuntime":
    """Locate ``_PyRuntime`` and choose its layout.

    3.13+: the layout comes from the ``_Py_DebugOffsets`` at the start of ``_PyRuntime``
    (checked: cookie, version, field sanity).  3.11/3.12: from the built-in tables, the
    version from ``Py_Version`` or else from ``version`` (e.g. taken by
    :func:`~.version.version_from_library_name` from ``libpython3.12.so``).  ``version``
    also names older versions in the error: "CPython 3.10 is not supported".
    """
    address = lookup("_PyRuntime")
    if not address:
        raise RuntimeNotFoundError("no _PyRuntime symbol: the program does not run "
                                   "CPython, or libpython is not loaded yet")
    head = memory.try_read(address, len(COOKIE))
    if head is None:
        raise RuntimeNotFoundError(f"cannot read _PyRuntime at {address:#x}")
    if head == COOKIE:  # the offsets carry the version, checked there
        layout = layout_from_debug_offsets(memory, address)
    else:
        py_version = read_py_version(memory, lookup)
        known = py_version or (as_version(version) if version is not None else None)
        if known is None:
            raise UnsupportedVersionError(
                "cannot tell the CPython version (no Py_Version symbol and no debug "
                "offsets in _PyRuntime): CPython before 3.11 is not supported")
        check_supported(known)
        if known.minor_version >= (3, 13):
            raise LayoutError(f"_PyRuntime at {address:#x} does not start with the "
                              f"'xdebugpy' cookie that CPython {known} puts there")
        layout = static_layout(known)
    return CPythonRuntime(memory, address, layout, max_frames)


def read_python_threads(memory: Memory, lookup: SymbolLookup,
                        version: Optional[VersionLike] = None) -> List[PyThread]:
    """Every Python thread of every interpreter, with its frames (innermost first)."""
    return find_runtime(memory, lookup, version).threads()


class CPythonRuntime:
    """The runtime of one stopped process.  Build one per stop (it caches code objects)."""

    def __init__(self, memory: Memory, address: int, layout: Layout,
                 max_frames: int = MAX_FRAMES):
        # one stop's reads: thousands of small ones in a few pages
        self.memory = memory if isinstance(memory, PageCache) else PageCache(memory)
        self.address = address
        self.layout = layout
        self.max_frames = max_frames
        self.codes = CodeReader(self.memory, layout)
        # (code object, instruction, bytecode copy) -> what a frame there shows: threads
        # running the same code (a recursion, a pool of workers) stand at a few of them.
        self._frame_texts: Dict[Tuple[int, int, int], tuple] = {}
        self._frame_reader: Optional[StructReader] = None
        self._by_native_id: Optional[dict] = None

    @property
    def version(self) -> PyVersion:
        return self.layout.version

    # -- linked lists --------------------------------------------------------------

    def _walk_list(self, first: int, next_offset: int, limit: int, what: str
                   ) -> Tuple[List[int], str]:
        addresses: List[int] = []
        seen = set()
        address = first
        while address:
            if len(addresses) >= limit:
                return addresses, f"more than {limit} {what}s"
            if address in seen:
                return addresses, f"{what} list loops at {address:#x}"
            if address % 8:
                return addresses, f"misaligned {what} pointer {address:#x}"
            addresses.append(address)
            seen.add(address)
            following = self.memory.try_read_u64(address + next_offset)
            if following is None:
                return addresses, f"cannot read the {what} at {address:#x}"
            address = following
        return addresses, ""

    def interpreter_addresses(self) -> Tuple[List[int], str]:
        """``PyInterpreterState *`` of every interpreter, main first, and a stop reason."""
        head = self.memory.try_read_u64(self.address + self.layout.runtime_interpreters_head)
        if head is None:
            return [], f"cannot read _PyRuntime.interpreters.head at {self.address:#x}"
        return self._walk_list(head, self.layout.interp_next, MAX_INTERPRETERS,
                               "interpreter")

    def thread_state_addresses(self, interp: int) -> Tuple[List[int], str]:
        """``PyThreadState *`` of the interpreter's threads, newest first."""
        head = self.memory.try_read_u64(interp + self.layout.interp_threads_head)
        if head is None:
            return [], f"cannot read the thread list of interpreter {interp:#x}"
        return self._walk_list(head, self.layout.tstate_next, MAX_THREADS, "thread state")

    # -- frames ----------------------------------------------------------------------

    def current_frame(self, tstate: int) -> int:
        """The thread's innermost ``_PyInterpreterFrame *`` (0 when it runs no Python).
        Raises MemoryReadError."""
        pointer = self.memory.read_u64(tstate + self.layout.tstate_frame)
        if self.layout.cframe_current_frame is None:
            return pointer
        if not pointer:  # 3.11/3.12: no _PyCFrame
            return 0
        return self.memory.read_u64(pointer + self.layout.cframe_current_frame)

    def read_raw_frame(self, address: int) -> RawFrame:
        """One ``_PyInterpreterFrame`` record.  Raises MemoryReadError."""
        if self._frame_reader is None:
            layout = self.layout
            fields = {"previous": (layout.frame_previous, "Q"),
                      "executable": (layout.frame_executable, "Q"),
                      "instr_ptr": (layout.frame_instr_ptr, "Q"),
                      "owner": (layout.frame_owner, "b")}
            if layout.frame_is_entry is not None:
                fields["is_entry"] = (layout.frame_is_entry, "?")
            if layout.frame_tlbc_index is not None:
                fields["tlbc_index"] = (layout.frame_tlbc_index, "i")
            self._frame_reader = StructReader(fields)
        values = self._frame_reader.read(self.memory, address)
        layout = self.layout
        return RawFrame(address, values[0], values[1] & ~layout.executable_tag_mask,
                        values[2], values[3],
                        bool(values[4]) if layout.frame_is_entry is not None else None,
                        values[-1] if layout.frame_tlbc_index is not None else 0)

    def raw_frames(self, first: int) -> Tuple[List[RawFrame], str]:
        """The records from ``first`` outwards (shims included) and a stop reason."""
        records: List[RawFrame] = []
        seen = set()
        address = first
        while address:
            if len(records) >= self.max_frames:
                return records, f"more than {self.max_frames} frames"
            if address in seen:
                return records, f"frame chain loops at {address:#x}"
            if address % 8:
                return records, f"misaligned frame pointer {address:#x}"
            try:
                record = self.read_raw_frame(address)
            except MemoryReadError:
                return records, f"cannot read the frame at {address:#x}"
            records.append(record)
            seen.add(address)
            address = record.previous
        return records, ""

    def python_frames(self, records: List[RawFrame]) -> List[PyFrame]:
        """Turn records into :class:`PyFrame` objects, leaving out shim frames."""
        frames = []
        for index, record in enumerate(records):
            if record.is_shim:
                continue
            if record.is_entry_flag is not None:
                is_entry = record.is_entry_flag
            else:
                older = records[index + 1] if index + 1 < len(records) else None
                is_entry = older is not None and older.owner == ENTRY_SHIM_OWNER
            frames.append(self._python_frame(record, is_entry))
        return frames

    def _python_frame(self, record: RawFrame, is_entry: bool) -> PyFrame:
        owner = OWNER_NAMES.get(record.owner, str(record.owner))
        key = (record.executable, record.instr_ptr, record.tlbc_index)
        shown = self._frame_texts.get(key)
        if shown is None:
            try:
                code = self.codes.read(record.executable)
            except (ObjectError, MemoryReadError) as error:
                return PyFrame(record.address, "<unknown>", "<unknown>", None, is_entry,
                               owner, record.executable, record.instr_ptr, error=str(error))
            start = self.codes.bytecode_start(code, record.tlbc_index)
            shown = self._frame_texts[key] = (
                code.qualname, code.filename, self.codes.line_at(code, record.instr_ptr, start),
                code.address, code.name, code.firstlineno)
        qualname, filename, line, code_address, name, firstlineno = shown
        return PyFrame(record.address, qualname, filename, line, is_entry, owner,
                       code_address, record.instr_ptr, name=name, firstlineno=firstlineno)

    def frame_at(self, address: int) -> Optional[PyFrame]:
        """The Python frame at ``address`` alone (None for a shim); ``is_entry`` needs
        the next older record on 3.12+, read too.  Raises MemoryReadError."""
        record = self.read_raw_frame(address)
        if record.is_shim:
            return None
        records = [record]
        if record.is_entry_flag is None and record.previous:
            try:
                records.append(self.read_raw_frame(record.previous))
            except MemoryReadError:
                pass
        return self.python_frames(records)[0]

    def frames(self, tstate: int) -> Tuple[Tuple[PyFrame, ...], str]:
        """The thread's Python frames, innermost first, and a stop reason."""
        try:
            first = self.current_frame(tstate)
        except MemoryReadError:
            return (), f"cannot read the current frame of thread state {tstate:#x}"
        records, reason = self.raw_frames(first)
        return tuple(self.python_frames(records)), reason

    # -- threads ---------------------------------------------------------------------

    def _interpreter_id(self, interp: int) -> int:
        """``PyInterpreterState.id`` (``int64_t``); -1 when unreadable."""
        data = self.memory.try_read(interp + self.layout.interp_id, 8)
        return struct.unpack("<q", data)[0] if data else -1

    def _gil(self, interp: int) -> Optional[Tuple[int, bool]]:
        """``(last_holder, locked)`` of the GIL the interpreter uses, None if unreadable
        or (free-threaded builds) disabled."""
        gil = self.layout.gil
        if gil is None:
            return None
        base: Optional[int]
        if gil.base == "runtime":
            base = self.address + gil.offset
        else:
            base = self.memory.try_read_u64(interp + gil.offset)
            if not base:
                return None
        if gil.enabled is not None:
            enabled = self.memory.try_read(base + gil.enabled, 4)
            if enabled is None or not struct.unpack("<i", enabled)[0]:
                return None
        holder = self.memory.try_read_u64(base + gil.last_holder)
        locked = self.memory.try_read(base + gil.locked, 4)
        if holder is None or locked is None:
            return None
        return holder, struct.unpack("<i", locked)[0] != 0

    def _holds_gil(self, tstate: int, gil: Optional[Tuple[int, bool]]) -> Optional[bool]:
        if self.layout.tstate_holds_gil is not None:
            data = self.memory.try_read(tstate + self.layout.tstate_holds_gil, 4)
            return None if data is None else struct.unpack("<i", data)[0] != 0
        if gil is None:
            return None
        holder, locked = gil
        return locked and holder == tstate

    def _attachment(self, tstate: int) -> Optional[str]:
        """Free-threaded builds: "attached" while the thread may run Python (it has no
        GIL to hold), "detached" while it waits or runs C code that let go, from bit 4
        (``active``) of the ``_status`` bit field the debug offsets locate; None when the
        build is not free-threaded or the field is unreadable or not initialised."""
        if self.layout.tstate_status is None:
            return None
        data = self.memory.try_read(tstate + self.layout.tstate_status, 4)
        if data is None:
            return None
        status = struct.unpack("<I", data)[0]
        if not status & _STATUS_INITIALIZED:
            return None
        return "attached" if status & _STATUS_ACTIVE else "detached"

    def read_thread(self, tstate: int, interpreter_id: int = 0,
                    gil: Optional[Tuple[int, bool]] = None) -> PyThread:
        """One thread state and its frames.  Unreadable ids give 0 / None."""
        try:
            ids = read_struct(self.memory, tstate, {
                "thread_id": (self.layout.tstate_thread_id, "Q"),
                "native_thread_id": (self.layout.tstate_native_thread_id, "Q")})
        except MemoryReadError:
            ids = {"thread_id": 0, "native_thread_id": 0}
        frames, reason = self.frames(tstate)
        return PyThread(tstate, interpreter_id, ids["thread_id"],
                        ids["native_thread_id"] or None, self._holds_gil(tstate, gil),
                        frames, reason, state=self._attachment(tstate))

    def interpreters(self) -> List[PyInterpreter]:
        """Every interpreter with its threads.  A failed read ends a list, with its
        reason in ``stop_reason`` (an unreadable interpreter list gives [])."""
        result = []
        addresses, _ = self.interpreter_addresses()
        for interp in addresses:
            interp_id = self._interpreter_id(interp)
            gil = self._gil(interp)
            tstates, reason = self.thread_state_addresses(interp)
            threads = tuple(self.read_thread(t, interp_id, gil) for t in tstates)
            result.append(PyInterpreter(interp, interp_id, threads, reason))
        return result

    def lifecycle_note(self) -> str:
        """One line for the user when the runtime is not running Python normally: not
        initialised yet (no interpreter, e.g. stopped at ``main``), finalizing (in
        ``Py_FinalizeEx``) or finalized (no interpreter left); "" otherwise.  3.13+ tell
        the last two apart by ``_PyRuntime._finalizing`` (from ``_Py_DebugOffsets``)."""
        head = self.memory.try_read_u64(self.address + self.layout.runtime_interpreters_head)
        if head is None:
            return ""  # interpreters() says what could not be read
        finalizing = None
        offsets = self.layout.debug_offsets or {}
        offset = offsets.get("runtime_state.finalizing")
        if offset and offset % 8 == 0 and offset + 8 <= offsets.get("runtime_state.size", 0):
            finalizing = self.memory.try_read_u64(self.address + offset)
        if not head:
            if finalizing:
                return "CPython has finalized its runtime: no interpreter is left"
            if finalizing == 0:
                return "the CPython runtime is not initialised yet: no interpreter exists"
            return ("the CPython runtime has no interpreter: it is not initialised yet, "
                    "or already finalized")
        if finalizing:
            return "CPython is finalizing: threads and frames may be partly torn down"
        return ""

    def interpreters_stop_reason(self) -> str:
        """Why :meth:`interpreters` may be incomplete ("" when it is not)."""
        return self.interpreter_addresses()[1]

    def threads(self) -> List[PyThread]:
        """Every Python thread of every interpreter."""
        return [thread for interp in self.interpreters() for thread in interp.threads]

    def _thread_states_by_native_id(self) -> dict:
        """native thread id (None: unreadable) -> [(tstate, interpreter)] in list
        order, read once: a debugger asks for each of its threads in turn."""
        if self._by_native_id is None:
            found: dict = {}
            for interp in self.interpreter_addresses()[0]:
                for tstate in self.thread_state_addresses(interp)[0]:
                    native = self.memory.try_read_u64(
                        tstate + self.layout.tstate_native_thread_id)
                    found.setdefault(native, []).append((tstate, interp))
            self._by_native_id = found
        return self._by_native_id

    def thread_by_native_id(self, native_thread_id: int) -> Optional[PyThread]:
        """The Python thread running on LWP ``native_thread_id`` (as debuggers number
        threads), None when that LWP runs no Python thread state.

        An OS thread that runs code in a subinterpreter has a thread state in each
        interpreter it entered, all with its native id: their frames are joined, newest
        interpreter first (the list's order; a subinterpreter's frames are newer than
        those of the code that entered it), so that no Python frame is lost."""
        found = [self.read_thread(tstate, self._interpreter_id(interp), self._gil(interp))
                 for tstate, interp in self._thread_states_by_native_id().get(
                     native_thread_id, ())]
        if len(found) <= 1:
            return found[0] if found else None
        running = [thread for thread in found if thread.frames] or found[:1]
        first = running[0]
        return replace(first, frames=tuple(f for t in running for f in t.frames),
                       stop_reason=running[-1].stop_reason)
