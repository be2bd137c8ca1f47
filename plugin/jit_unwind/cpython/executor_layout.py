"""The layout of CPython's JIT executors (``_PyExecutorObject``) and of the fields of
``PyInterpreterState`` that list them, per version: built-in tables checked against
DWARF, which a process's own ``_Py_DebugOffsets`` or DWARF override (``executors.py``)."""

import bisect
import dataclasses
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple

from .errors import UnsupportedVersionError
from .version import VersionLike, as_version

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
        # mypy checks **offsets against every field; its keys name int fields only.
        return dataclasses.replace(self, source=source, **offsets)  # type: ignore[arg-type]

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
