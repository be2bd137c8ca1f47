"""CPython's JIT executors (3.13+): where each trace's machine code is, and for which code.

With the experimental JIT on (``--enable-experimental-jit``, ``PYTHON_JIT=1``) every
hot loop gets an *executor* (``_PyExecutorObject``, a Python object of type
``uop_executor``) and, for it, one anonymous mmap of machine code::

    jit_code                jit_side_entry                          jit_code + jit_size
    | entry shim (C ABI)    | trace: one stencil per uop, no frame  | data | padding |
      pushes callee-saved     pointer (rbp is a general register);
      registers, calls -->    side exits of other executors jump here

``jit_code`` is page aligned (one ``mmap`` per executor) and ``jit_size`` is a whole
number of pages.  CPython does not store the size of the machine code alone
(``_PyJIT_Compile`` computes ``code_size`` and ``data_size`` and keeps only their
page-rounded sum, and ``_PyExecutorObject.code_size`` counts uops, not bytes), so the
trace region runs to ``jit_code + jit_size`` and includes the data and the padding.

Every executor made by the optimizer is linked into its interpreter's list
(``PyInterpreterState.executor_list_head`` -> ``vm_data.links.next`` -> ...; the head's
``links.previous`` is NULL); ``vm_data.code`` is the ``PyCodeObject *`` whose
``ENTER_EXECUTOR`` runs it (NULL for 3.14+ side-exit executors, which get the code of
the executor whose exit leads to them).  What the list misses: an executor that was
invalidated while one of its traces still runs (unlinked at once, freed only when the
trace returns: 3.13's shim holds a reference), 3.14+'s deletion list, and 3.13's
``COLD_EXITS`` (a static array of 200 one-uop executors, each with its own mmap; read
when the symbol lookup knows the static symbol ``COLD_EXITS``).

Layouts (x86-64, GIL builds):

* 3.13: ``Include/internal/pycore_optimizer.h`` and ``pycore_interp.h`` of CPython
  v3.13.5 (Debian's python3.13 3.13.5 source); checked against the DWARF of that source
  built with ``--enable-experimental-jit=yes-off`` (tests/fixtures/build_cpython.sh;
  ``ptype /o struct _PyExecutorObject``, ``PyInterpreterState``) and of pyenv's 3.13.0
  (no JIT): ``executor_list_head`` is at 0x2f258 in both, right after ``optimizer``
  (``PyInterpreterState`` of 3.13 has no ``_Py_TIER2``/``_Py_JIT`` conditional fields).
* 3.14: ``pycore_optimizer.h`` of the 3.14 branch (python/cpython, the version with
  ``EXECUTOR_DELETE_LIST_MAX`` and ``jit_side_entry``): the executor fields are where
  3.13 has them; ``valid``/``linked`` became bit fields.  Not checked against a binary.
  The offset of ``executor_list_head`` is not in the table (it follows ``types``,
  ``ast`` and other large states): without a DWARF override it is found after
  ``PyObject *common_consts[NUM_COMMON_CONSTANTS]`` (5 entries, the first two are
  ``PyExc_AssertionError`` and ``PyExc_NotImplementedError``, whose addresses come from
  the symbol lookup) and ``bool jit``.
* 3.15 (3.15.0rc2 built with ``--enable-experimental-jit=yes-off``, LLVM 22 stencils;
  ``ptype /o struct _PyExecutorObject``, ``_PyVMData`` and ``PyInterpreterState`` in
  GDB on that build): no list any more.  ``PyInterpreterState`` keeps the executors in
  an array, ``executor_ptrs[executor_count]`` (each executor's
  ``vm_data.bloom_array_idx`` is its index there), invalidated ones waiting to be freed
  in ``executor_deletion_list_head`` (linked by ``vm_data.links``), and two shared
  executors of its own, ``cold_executor`` and ``cold_dynamic_executor``.  These follow
  ``common_consts[12]``, ``bool jit``, ``bool compiling`` and a 16-byte
  ``_PyOptimizationConfig``: ``executor_ptrs`` is 0x80 bytes after ``common_consts``
  (0x368d0 and 0x36850 on that build).  The executor: ``vm_data`` at 32 (``links`` at
  48, ``code`` at 64), ``exit_count`` 72, ``jit_size`` 80, ``jit_code`` 88,
  ``jit_registration`` 96, ``exits`` 104, 120 bytes.  ``jit_side_entry`` is gone: every
  trace is entered through ``_PyJIT_Entry`` (``_Py_jit_entry``), a function of the
  interpreter with its own ``.eh_frame``, so ``jit_code`` is the start of the trace.
  Each compiled executor is also registered through GDB's JIT interface as
  ``py::jit:executor`` (:mod:`jit_unwind.regions.jit_interface`); its ``.eh_frame``
  unwinds the trace straight into the eval loop.

:func:`jit_unwind.regions.cpython_jit.executor_regions` turns executors into
:class:`~jit_unwind.model.Region` objects (that module, not this package, knows the
core's data model).

Offsets from the debugger's DWARF are the truth when there are any: adapters build an
:class:`ExecutorLayout` with :meth:`ExecutorLayout.with_offsets` (field names and the C
members they stand for are in :data:`DWARF_FIELDS`) and pass it to
:func:`read_executors`.

Measured on CPython 3.13.5 built with the JIT (x86-64, LLVM 19 stencils, GCC 12 for the
rest; tests/unit/test_cpython_executors.py checks it on every run): every executor's
shim is the same 112 bytes (0x70, ``trampoline.code_size``), so ``jit_side_entry ==
jit_code + 0x70``::

    +0x00  55 41 57 41 56 41 55 41 54 53 50  push rbp, r15, r14, r13, r12, rbx, rax
    +0x0b  48 89 f5                          mov rbp, rsi
    +0x0e  48 8b 0d <rel32>                  mov rcx, [rip+..]   (the executor, from data)
    +0x15  8b 01 ff c0 74 02 89 01           Py_INCREF(executor) (skipped if immortal)
    +0x1d  49 89 fd 49 89 d4 48 89 14 24     mov r13, rdi; mov r12, rdx; mov [rsp], rdx
    +0x27  90 e8 <rel32>                     nop; call jit_code+0x70 (the trace)
    +0x2d  ...                               previous_executor swap, Py_DECREF,
                                             add rsp, 8; pop x6; ret

(the ``call`` is ``ff 15`` through the data part in the stencil; the JIT relaxes it to
``nop; call rel32``).  So a trace's return address is ``jit_code + 0x2d`` and, there,
the shim has pushed all six callee-saved registers in 56 bytes (``push rax`` only keeps
the stack aligned; its slot holds ``tstate``).  The shim's 24 data bytes live in the data
part after the trace code.  The traces keep no frame pointer (``rbp`` holds the value
stack pointer).

Mappings: each executor is its own ``mmap`` (one to three pages here), the kernel puts
new ones next to earlier ones, and /proc/PID/maps merges neighbours with the same
permissions: in a run with 222 executors (22 traces, 200 cold exits) 217 of the
221 consecutive pairs were adjacent, and one ``r-xp`` mapping held 202 executors.  A
maps region is therefore no executor boundary: only this list tells where each starts.

Nothing here raises on unreadable or inconsistent memory: the list ends and
:attr:`ExecutorList.stop_reason` says why.  Every walk is bounded.
"""

import bisect
import dataclasses
import struct
from dataclasses import dataclass
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..target import Memory, MemoryReadError
from .errors import ObjectError, UnsupportedVersionError
from .objects import read_type_name
from .runtime import CPythonRuntime, SymbolLookup
from .version import VersionLike, as_version

__all__ = ["ExecutorLayout", "EXECUTOR_LAYOUTS", "DWARF_FIELDS", "executor_layout",
           "Executor", "ExecutorList", "read_executors", "MAX_EXECUTORS",
           "EXECUTOR_TYPE_NAME"]

MAX_EXECUTORS = 100_000
MAX_EXITS = 4096              # exits of one executor we look at (3.13: < 200)
MAX_JIT_SIZE = 64 << 20       # bytes of one executor's mapping we believe
PAGE = 4096
EXECUTOR_TYPE_NAME = "uop_executor"
MAX_INTERP_SCAN = 1 << 20     # bytes of PyInterpreterState searched for common_consts
_SCAN_CHUNK = 64 << 10


@dataclass(frozen=True)
class ExecutorLayout:
    """Byte offsets of the fields read, in ``PyInterpreterState`` (``interp_*``) and in
    ``_PyExecutorObject`` (the rest).

    ``interp_list_head`` None: not known without DWARF, found by the common_consts
    probe (3.14+).  ``interp_optimizer`` (3.13): ``PyInterpreterState.optimizer``, the
    field before the list head, checked to point at a ``*_optimizer`` object (or be
    NULL) before the head is trusted.  ``jit_side_entry`` None: no per-executor shim
    (3.15).  ``linked`` is ``(byte offset, bit mask)`` of ``vm_data.linked``.
    """

    version: str
    source: str
    interp_list_head: Optional[int]
    interp_optimizer: Optional[int] = None
    common_consts: Optional[int] = None  # NUM_COMMON_CONSTANTS for the 3.14+ probe
    ob_type: int = 8
    links_next: int = 72
    links_previous: int = 80
    code: int = 88
    exit_count: int = 96
    jit_size: int = 104
    jit_code: int = 112
    jit_side_entry: Optional[int] = 120
    exits: int = 128
    exit_size: int = 16          # sizeof(_PyExitData)
    exit_executor: int = 8       # offsetof(_PyExitData, executor)
    linked: Tuple[int, int] = (35, 0xFF)
    executor_size: int = 144     # sizeof(_PyExecutorObject) (stride of COLD_EXITS)
    cold_exit_count: int = 0     # 3.13: COLD_EXIT_COUNT = UOP_MAX_TRACE_LENGTH / 4
    # 3.15: PyInterpreterState's executor array and what follows it (from DWARF), or
    # for the table, executor_ptrs's distance from common_consts (ARRAY_FIELDS then
    # give the rest).  All None: the list of 3.13 and 3.14.
    interp_executor_ptrs: Optional[int] = None
    interp_executor_count: Optional[int] = None
    interp_deletion_head: Optional[int] = None
    interp_cold_executor: Optional[int] = None
    interp_cold_dynamic_executor: Optional[int] = None
    array_after_consts: Optional[int] = None
    array_index: Optional[int] = None  # vm_data.bloom_array_idx (int32): its array slot

    def with_offsets(self, source: str, **offsets: int) -> "ExecutorLayout":
        """This layout with some offsets replaced (e.g. measured from DWARF)."""
        return dataclasses.replace(self, source=source, **offsets)

    @property
    def uses_array(self) -> bool:
        """True when the executors are in an array (3.15), not a list."""
        return self.interp_executor_ptrs is not None or self.array_after_consts is not None

    def array_fields(self, consts: Optional[int]) -> Optional[Tuple[int, ...]]:
        """Offsets of executor_ptrs, executor_count, executor_deletion_list_head,
        cold_executor and cold_dynamic_executor: DWARF's, else the table's from where
        ``common_consts`` was found (None when neither is known)."""
        if self.interp_executor_ptrs is not None:
            fields = (self.interp_executor_ptrs, self.interp_executor_count,
                      self.interp_deletion_head, self.interp_cold_executor,
                      self.interp_cold_dynamic_executor)
            if all(field is not None for field in fields):
                return fields  # type: ignore[return-value]
        if consts is None or self.array_after_consts is None:
            return None
        base = consts + self.array_after_consts
        return tuple(base + delta for delta in ARRAY_FIELDS)

    @property
    def record_end(self) -> int:
        """Bytes of ``_PyExecutorObject`` read per executor."""
        last = max(self.links_next, self.links_previous, self.code, self.jit_size,
                   self.jit_code, self.jit_side_entry or 0, self.exit_count,
                   self.linked[0], self.array_index or 0)
        return last + 8


# Field name -> (C type, member) for adapters that read offsets from DWARF.
DWARF_FIELDS: Dict[str, Tuple[str, str]] = {
    "interp_list_head": ("PyInterpreterState", "executor_list_head"),
    "interp_optimizer": ("PyInterpreterState", "optimizer"),
    "links_next": ("_PyExecutorObject", "vm_data.links.next"),
    "links_previous": ("_PyExecutorObject", "vm_data.links.previous"),
    "code": ("_PyExecutorObject", "vm_data.code"),
    "exit_count": ("_PyExecutorObject", "exit_count"),
    "jit_size": ("_PyExecutorObject", "jit_size"),
    "jit_code": ("_PyExecutorObject", "jit_code"),
    "jit_side_entry": ("_PyExecutorObject", "jit_side_entry"),
    "exits": ("_PyExecutorObject", "exits"),
    "array_index": ("_PyExecutorObject", "vm_data.bloom_array_idx"),
    "interp_executor_ptrs": ("PyInterpreterState", "executor_ptrs"),
    "interp_executor_count": ("PyInterpreterState", "executor_count"),
    "interp_deletion_head": ("PyInterpreterState", "executor_deletion_list_head"),
    "interp_cold_executor": ("PyInterpreterState", "cold_executor"),
    "interp_cold_dynamic_executor": ("PyInterpreterState", "cold_dynamic_executor"),
}

# 3.15.0rc2: executor_ptrs, executor_count, (executor_capacity,)
# executor_deletion_list_head, cold_executor, cold_dynamic_executor, from executor_ptrs.
ARRAY_FIELDS = (0, 8, 0x18, 0x20, 0x28)
MAX_ARRAY = 1 << 20           # executors in one interpreter's array we believe

EXECUTOR_LAYOUTS: Dict[Tuple[int, int], ExecutorLayout] = {
    (3, 13): ExecutorLayout(
        version="3.13",
        source="built-in table for 3.13 (v3.13.5 headers, checked against DWARF)",
        interp_list_head=0x2F258, interp_optimizer=0x2F250,
        linked=(35, 0xFF),          # uint8_t linked
        executor_size=144, cold_exit_count=200),
    (3, 14): ExecutorLayout(
        version="3.14",
        source="built-in table for 3.14 (3.14 branch headers, not checked on a binary)",
        interp_list_head=None, common_consts=5,
        linked=(34, 0x02),          # uint8_t valid:1, linked:1, chain_depth:6
        executor_size=144),
    (3, 15): ExecutorLayout(
        version="3.15",
        source="built-in table for 3.15 (3.15.0rc2, checked against its DWARF)",
        interp_list_head=None, common_consts=12,
        links_next=48, links_previous=56, code=64, exit_count=72, jit_size=80,
        jit_code=88, jit_side_entry=None, exits=104,
        linked=(34, 0xFF),          # uint8_t valid (no linked flag: the array says)
        executor_size=120, array_after_consts=0x80, array_index=44),
}


def executor_layout(version: VersionLike) -> ExecutorLayout:
    """The built-in layout of a CPython minor version (3.13 to 3.15)."""
    minor = as_version(version).minor_version
    layout = EXECUTOR_LAYOUTS.get(minor)
    if layout is None:
        raise UnsupportedVersionError(
            f"CPython {minor[0]}.{minor[1]} has no JIT executors that jit-unwind can read "
            f"(3.13 to 3.15)")
    return layout


@dataclass(frozen=True)
class Executor:
    """One executor with machine code.

    ``shim_end`` is ``jit_side_entry``: the entry shim is ``[jit_code, shim_end)`` and
    the trace ``[shim_end, jit_code + jit_size)`` (3.15 has no shim per executor:
    ``shim_end == jit_code``).  ``code_address`` is the ``PyCodeObject *`` the executor
    was made for; ``parent`` is set when that came from the executor whose side exit
    leads here (3.14+ side-exit executors have no code of their own).  ``kind`` is
    ``trace`` or ``cold-exit``.  ``error`` says why the code object could not be read
    (the names are then ``<unknown>``)."""

    address: int
    jit_code: int
    shim_end: int
    jit_size: int
    code_address: int
    qualname: str
    filename: str
    firstlineno: Optional[int]
    interpreter: int = 0
    kind: str = "trace"
    parent: Optional[int] = None
    error: str = ""

    @property
    def end(self) -> int:
        """End of the mapping (the trace's machine code, its data and padding)."""
        return self.jit_code + self.jit_size

    @property
    def has_shim(self) -> bool:
        return self.shim_end > self.jit_code

    def __contains__(self, pc: int) -> bool:
        return self.jit_code <= pc < self.end

    def in_shim(self, pc: int) -> bool:
        return self.jit_code <= pc < self.shim_end

    @property
    def description(self) -> str:
        """``qualname (file:firstlineno)``, or the bare name without a file."""
        if self.filename and self.filename != "<unknown>" and self.firstlineno is not None:
            return f"{self.qualname} ({self.filename}:{self.firstlineno})"
        return self.qualname


@dataclass(frozen=True)
class ExecutorList:
    """The executors of every interpreter, sorted by ``jit_code``.

    ``stop_reason`` is empty when every list was read to its end.  ``skipped`` counts
    linked executors without machine code (JIT off: the tier-2 interpreter runs them).
    ``list_heads`` maps each interpreter to the offset of ``executor_list_head`` used
    (3.15: of ``executor_ptrs``)."""

    executors: Tuple[Executor, ...]
    stop_reason: str = ""
    skipped: int = 0
    list_heads: Tuple[Tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", [e.jit_code for e in self.executors])

    def __len__(self) -> int:
        return len(self.executors)

    def __iter__(self) -> Iterator[Executor]:
        return iter(self.executors)

    def find(self, pc: int) -> Optional[Executor]:
        """The executor whose mapping holds ``pc`` (binary search), or None."""
        index = bisect.bisect_right(self._starts, pc) - 1  # type: ignore[attr-defined]
        if index >= 0 and pc in self.executors[index]:
            return self.executors[index]
        return None


@dataclass
class _Raw:
    address: int
    next: int
    previous: int
    code: int
    jit_code: int
    jit_size: int
    side_entry: Optional[int]
    exit_count: int
    linked: bool


class _Reader:
    def __init__(self, memory: Memory, runtime: CPythonRuntime, layout: ExecutorLayout,
                 lookup: Optional[SymbolLookup], max_executors: int):
        self.memory = memory
        self.runtime = runtime
        self.layout = layout
        self.lookup = lookup
        self.max_executors = max_executors
        self.type_names: Dict[int, Optional[str]] = {}

    # -- objects ---------------------------------------------------------------------

    def type_name(self, address: int) -> Optional[str]:
        """``tp_name`` of the object at ``address`` (cached by type), None if unreadable."""
        type_address = self.memory.try_read_u64(address + self.layout.ob_type)
        if type_address is None:
            return None
        if type_address not in self.type_names:
            try:
                self.type_names[type_address] = read_type_name(self.memory,
                                                               self.runtime.layout, address)
            except (MemoryReadError, ObjectError):
                self.type_names[type_address] = None
        return self.type_names[type_address]

    def read_raw(self, address: int) -> _Raw:
        """One executor's fields; raises MemoryReadError."""
        layout = self.layout
        data = self.memory.read(address, layout.record_end)

        def u64(offset: int) -> int:
            return struct.unpack_from("<Q", data, offset)[0]

        byte, mask = layout.linked
        return _Raw(address, u64(layout.links_next), u64(layout.links_previous),
                    u64(layout.code), u64(layout.jit_code), u64(layout.jit_size),
                    u64(layout.jit_side_entry) if layout.jit_side_entry is not None
                    else None,
                    struct.unpack_from("<I", data, layout.exit_count)[0],
                    bool(data[byte] & mask))

    def check_machine_code(self, raw: _Raw) -> str:
        """Why the executor's jit fields cannot be right ("" when they look right)."""
        if raw.jit_code % PAGE:
            return f"jit_code {raw.jit_code:#x} is not page aligned"
        if not 0 < raw.jit_size <= MAX_JIT_SIZE or raw.jit_size % PAGE:
            return f"jit_size {raw.jit_size:#x} is not a plausible number of pages"
        if raw.side_entry is not None and not (
                raw.jit_code <= raw.side_entry < raw.jit_code + raw.jit_size):
            return (f"jit_side_entry {raw.side_entry:#x} is outside "
                    f"[{raw.jit_code:#x}, {raw.jit_code + raw.jit_size:#x})")
        return ""

    def exit_targets(self, raw: _Raw) -> List[int]:
        """``exits[i].executor`` of the executor (empty when unreadable)."""
        count = min(raw.exit_count, MAX_EXITS)
        if not count:
            return []
        layout = self.layout
        data = self.memory.try_read(raw.address + layout.exits, count * layout.exit_size)
        if data is None:
            return []
        return [struct.unpack_from("<Q", data,
                                   i * layout.exit_size + layout.exit_executor)[0]
                for i in range(count)]

    # -- the list head -----------------------------------------------------------------

    def check_head(self, head: int) -> str:
        """Why ``head`` cannot be an executor list head ("" when it can)."""
        if head == 0:
            return ""
        if head % 8:
            return f"misaligned pointer {head:#x}"
        name = self.type_name(head)
        if name != EXECUTOR_TYPE_NAME:
            return f"{head:#x} is not a {EXECUTOR_TYPE_NAME} (type {name!r})"
        try:
            raw = self.read_raw(head)
        except MemoryReadError:
            return f"cannot read the executor at {head:#x}"
        if raw.previous != 0:
            return f"the executor at {head:#x} has a previous executor"
        if not raw.linked:
            return f"the executor at {head:#x} is not linked"
        return ""

    def list_head_offset(self, interp: int) -> Tuple[Optional[int], str]:
        """Offset of ``executor_list_head`` in this interpreter and a failure reason."""
        layout = self.layout
        if layout.interp_list_head is not None:
            offset = layout.interp_list_head
            if layout.interp_optimizer is not None:
                optimizer = self.memory.try_read_u64(interp + layout.interp_optimizer)
                if optimizer is None:
                    return None, (f"cannot read PyInterpreterState.optimizer of "
                                  f"interpreter {interp:#x}")
                name = self.type_name(optimizer) if optimizer else ""
                if optimizer and not (name or "").endswith("optimizer"):
                    return None, (f"PyInterpreterState.optimizer at "
                                  f"+{layout.interp_optimizer:#x} of interpreter "
                                  f"{interp:#x} points to a {name!r}, not an optimizer: "
                                  f"the {layout.source} does not fit this build")
            return offset, ""
        if layout.common_consts is None:
            return None, "the offset of PyInterpreterState.executor_list_head is unknown"
        return self.probe_common_consts(interp)

    def probe_common_consts(self, interp: int) -> Tuple[Optional[int], str]:
        """3.14: find ``common_consts`` (AssertionError, NotImplementedError, ...)
        in the interpreter; ``bool jit`` and ``executor_list_head`` follow it.  A NULL
        head cannot be checked: with the JIT off an empty list is all this can say."""
        for consts in self.common_consts_candidates(interp):
            jit_offset = consts + 8 * (self.layout.common_consts or 0)
            jit_flag = self.memory.try_read_u64(interp + jit_offset)
            head = self.memory.try_read_u64(interp + jit_offset + 8)
            # bool jit (padded to 8 bytes), then the head: 0 or a real head.
            if jit_flag in (0, 1) and head is not None and not self.check_head(head):
                return jit_offset + 8, ""
        return None, self.consts_problem(interp)

    def consts_problem(self, interp: int) -> str:
        """Why no ``common_consts`` candidate of ``interp`` was right."""
        if self.lookup is None:
            return ("the offset of PyInterpreterState's executors is not in the tables: "
                    "it needs DWARF or the PyExc_AssertionError and "
                    "PyExc_NotImplementedError symbols")
        return (f"PyInterpreterState.common_consts not found in the first "
                f"{MAX_INTERP_SCAN:#x} bytes of interpreter {interp:#x}")

    def common_consts_candidates(self, interp: int) -> Iterator[int]:
        """Offsets in the interpreter (8-aligned, nearest first) holding
        ``PyExc_AssertionError`` then ``PyExc_NotImplementedError``: where
        ``common_consts`` may be.  Nothing without the symbols."""
        if self.lookup is None:
            return
        values = []
        for name in ("PyExc_AssertionError", "PyExc_NotImplementedError"):
            address = self.lookup(name)
            value = self.memory.try_read_u64(address) if address else None
            if not value:
                return
            values.append(value)
        needle = struct.pack("<QQ", *values)
        offset = 0
        tail = b""
        while offset < MAX_INTERP_SCAN:
            chunk = self.memory.try_read(interp + offset, _SCAN_CHUNK)
            if chunk is None:
                return
            data = tail + chunk
            base = offset - len(tail)
            position = data.find(needle)
            while position >= 0:
                if (base + position) % 8 == 0:
                    yield base + position
                position = data.find(needle, position + 1)
            tail = data[-(len(needle) - 1):]
            offset += _SCAN_CHUNK

    # -- walks -------------------------------------------------------------------------

    def walk(self, interp: int, head_offset: int, budget: int
             ) -> Tuple[List[_Raw], int, str]:
        """The linked executors of one interpreter: (with machine code, skipped, reason)."""
        head = self.memory.try_read_u64(interp + head_offset)
        if head is None:
            return [], 0, f"cannot read executor_list_head of interpreter {interp:#x}"
        problem = self.check_head(head)
        if problem:
            return [], 0, (f"PyInterpreterState.executor_list_head at +{head_offset:#x} of "
                           f"interpreter {interp:#x} is not a list head ({problem}): the "
                           f"{self.layout.source} does not fit this build")
        found: List[_Raw] = []
        skipped = 0
        seen = set()
        previous = 0
        address = head
        count = 0
        while address:
            if count >= budget:
                return found, skipped, f"more than {self.max_executors} executors"
            if address in seen:
                return found, skipped, f"executor list loops at {address:#x}"
            if address % 8:
                return found, skipped, f"misaligned executor pointer {address:#x}"
            seen.add(address)
            count += 1
            try:
                raw = self.read_raw(address)
            except MemoryReadError:
                return found, skipped, f"cannot read the executor at {address:#x}"
            name = self.type_name(address)
            if name != EXECUTOR_TYPE_NAME:
                return found, skipped, (f"object at {address:#x} in the executor list is a "
                                        f"{name!r}, not a {EXECUTOR_TYPE_NAME}")
            if raw.previous != previous:
                return found, skipped, (f"executor {address:#x} links back to "
                                        f"{raw.previous:#x}, not {previous:#x}")
            if raw.jit_code == 0:
                skipped += 1
            else:
                problem = self.check_machine_code(raw)
                if problem:
                    return found, skipped, f"executor {address:#x}: {problem}"
                found.append(raw)
            previous = address
            address = raw.next
        return found, skipped, ""

    def cold_exits(self) -> Tuple[List[Tuple[int, _Raw]], str]:
        """3.13's static ``COLD_EXITS`` array (when the lookup knows the symbol):
        ``(index, executor)`` of those with machine code, and a stop reason."""
        layout = self.layout
        if not layout.cold_exit_count:  # 3.14+ has none: no lookup (a missing name
            return [], ""               # costs a parse of the whole symbol table)
        base = self.lookup("COLD_EXITS") if self.lookup is not None else None
        if not base:
            return [], ""
        found = []
        for index in range(layout.cold_exit_count):
            address = base + index * layout.executor_size
            try:
                raw = self.read_raw(address)
            except MemoryReadError:
                return found, f"cannot read COLD_EXITS[{index}] at {address:#x}"
            if raw.jit_code == 0:  # not compiled: the JIT was never switched on
                continue
            if (self.type_name(address) != EXECUTOR_TYPE_NAME
                    or self.check_machine_code(raw)):
                return found, f"COLD_EXITS[{index}] at {address:#x} is not an executor"
            found.append((index, raw))
        return found, ""

    def executor(self, raw: _Raw, interp: int, code_address: int, kind: str,
                 parent: Optional[int], name: str = "") -> Executor:
        shim_end = raw.side_entry if raw.side_entry is not None else raw.jit_code
        if name:
            return Executor(raw.address, raw.jit_code, shim_end, raw.jit_size, 0, name,
                            "", None, interp, kind)
        if not code_address:
            return Executor(raw.address, raw.jit_code, shim_end, raw.jit_size, 0,
                            f"<executor {raw.address:#x}>", "", None, interp, kind, parent,
                            "no code object")
        try:
            code = self.runtime.codes.read(code_address)
        except (ObjectError, MemoryReadError) as error:
            return Executor(raw.address, raw.jit_code, shim_end, raw.jit_size, code_address,
                            "<unknown>", "<unknown>", None, interp, kind, parent,
                            str(error))
        return Executor(raw.address, raw.jit_code, shim_end, raw.jit_size, code_address,
                        code.qualname, code.filename, code.firstlineno, interp, kind,
                        parent)


def _codes_through_parents(raws: Sequence[_Raw], exits: Mapping[int, List[int]]
                           ) -> Dict[int, Tuple[int, Optional[int]]]:
    """executor -> (code object, parent executor it came from or None).  Executors
    without code take their parent's, following side exits from executors with code
    (bounded: each executor is visited once)."""
    result: Dict[int, Tuple[int, Optional[int]]] = {
        raw.address: (raw.code, None) for raw in raws if raw.code}
    pending = [raw.address for raw in raws if raw.code]
    known = {raw.address for raw in raws}
    while pending:
        parent = pending.pop()
        code = result[parent][0]
        for child in exits.get(parent, ()):
            if child in known and child not in result:
                result[child] = (code, parent)
                pending.append(child)
    return result


def read_executors(memory: Memory, runtime: CPythonRuntime,
                   layout: Optional[ExecutorLayout] = None,
                   lookup: Optional[SymbolLookup] = None,
                   max_executors: int = MAX_EXECUTORS) -> ExecutorList:
    """Every executor with machine code, of every interpreter of ``runtime``
    (a :class:`~.runtime.CPythonRuntime`), sorted by ``jit_code``.

    ``layout`` overrides the built-in table (e.g. offsets from DWARF).  ``lookup``
    (``name -> address or None``) finds 3.13's ``COLD_EXITS`` and, for 3.14+ without
    DWARF, ``PyExc_AssertionError``/``PyExc_NotImplementedError``.  Never raises for
    unreadable or inconsistent memory: the result's ``stop_reason`` says what ended a
    list.  Raises :class:`UnsupportedVersionError` for versions without executors."""
    if layout is None:
        layout = executor_layout(runtime.version)
    reader = _Reader(memory, runtime, layout, lookup, max_executors)
    reasons: List[str] = []
    interps, reason = runtime.interpreter_addresses()
    if reason:
        reasons.append(reason)
    raws: List[Tuple[_Raw, int]] = []
    skipped = 0
    heads = []
    named: List[Tuple[str, _Raw, int]] = []  # 3.15's cold executors
    for interp in interps:
        if layout.uses_array:
            from .executor_array import array_fields, walk_array
            fields, reason = array_fields(reader, interp)
            if fields is None:
                if reason:
                    reasons.append(reason)
                continue
            heads.append((interp, fields[0]))
            found, cold_here, skipped_here, reason = walk_array(
                reader, interp, fields, max_executors - len(raws))
            raws.extend((raw, interp) for raw in found)
            named.extend((name, raw, interp) for name, raw in cold_here)
            skipped += skipped_here
            if reason:
                reasons.append(reason)
            continue
        offset, reason = reader.list_head_offset(interp)
        if offset is None:
            reasons.append(reason)
            continue
        heads.append((interp, offset))
        found, skipped_here, reason = reader.walk(interp, offset, max_executors - len(raws))
        raws.extend((raw, interp) for raw in found)
        skipped += skipped_here
        if reason:
            reasons.append(reason)
    exits = {raw.address: reader.exit_targets(raw) for raw, _ in raws}
    codes = _codes_through_parents([raw for raw, _ in raws], exits)
    executors = []
    for raw, interp in raws:
        code, parent = codes.get(raw.address, (0, None))
        executors.append(reader.executor(raw, interp, code, "trace", parent))
    cold, reason = reader.cold_exits()
    if reason:
        reasons.append(reason)
    main = interps[0] if interps else 0
    for index, raw in cold:
        executors.append(reader.executor(raw, main, 0, "cold-exit", None,
                                         name=f"<cold exit {index}>"))
    for name, raw, interp in named:
        executors.append(reader.executor(raw, interp, 0, "cold-exit", None, name=name))
    executors.sort(key=lambda e: e.jit_code)
    return ExecutorList(tuple(executors), "; ".join(reasons), skipped, tuple(heads))
