"""Reading executors from memory: one executor's fields (``RawExecutor``) and the
checks that tell an executor list head or array from other memory (``ExecutorReader``),
shared by the linked list of 3.13/3.14 (``executors.py``) and 3.15's array
(``executor_array.py``)."""

import struct
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

from ..target import Memory, MemoryReadError
from .errors import ObjectError
from .executor_layout import Executor, ExecutorLayout
from .objects import read_type_name
from .runtime import CPythonRuntime, SymbolLookup

MAX_EXECUTORS = 100_000
MAX_EXITS = 4096              # exits of one executor we look at (3.13: < 200)
MAX_JIT_SIZE = 64 << 20       # bytes of one executor's mapping we believe
PAGE = 4096
EXECUTOR_TYPE_NAME = "uop_executor"
MAX_INTERP_SCAN = 1 << 20     # bytes of PyInterpreterState searched for common_consts
_SCAN_CHUNK = 64 << 10


@dataclass
class RawExecutor:
    address: int
    next: int
    previous: int
    code: int
    jit_code: int
    jit_size: int
    side_entry: Optional[int]
    exit_count: int
    linked: bool


class ExecutorReader:
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

    def read_raw(self, address: int) -> RawExecutor:
        """One executor's fields; raises MemoryReadError."""
        layout = self.layout
        data = self.memory.read(address, layout.record_end)

        def u64(offset: int) -> int:
            return struct.unpack_from("<Q", data, offset)[0]

        byte, mask = layout.linked
        return RawExecutor(address, u64(layout.links_next), u64(layout.links_previous),
                    u64(layout.code), u64(layout.jit_code), u64(layout.jit_size),
                    u64(layout.jit_side_entry) if layout.jit_side_entry is not None
                    else None,
                    struct.unpack_from("<I", data, layout.exit_count)[0],
                    bool(data[byte] & mask))

    def check_machine_code(self, raw: RawExecutor) -> str:
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

    def exit_targets(self, raw: RawExecutor) -> List[int]:
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
             ) -> Tuple[List[RawExecutor], int, str]:
        """The linked executors of one interpreter: (with machine code, skipped, reason)."""
        head = self.memory.try_read_u64(interp + head_offset)
        if head is None:
            return [], 0, f"cannot read executor_list_head of interpreter {interp:#x}"
        problem = self.check_head(head)
        if problem:
            return [], 0, (f"PyInterpreterState.executor_list_head at +{head_offset:#x} of "
                           f"interpreter {interp:#x} is not a list head ({problem}): the "
                           f"{self.layout.source} does not fit this build")
        found: List[RawExecutor] = []
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

    def cold_exits(self) -> Tuple[List[Tuple[int, RawExecutor]], str]:
        """3.13's static ``COLD_EXITS`` array (when the lookup knows the symbol):
        ``(index, executor)`` of those with machine code, and a stop reason."""
        layout = self.layout
        if not layout.cold_exit_count:  # 3.14+ has none: no lookup (a missing name
            return [], ""               # costs a parse of the whole symbol table)
        base = self.lookup("COLD_EXITS") if self.lookup is not None else None
        if not base:
            return [], ""
        found: List[Tuple[int, RawExecutor]] = []
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

    def executor(self, raw: RawExecutor, interp: int, code_address: int, kind: str,
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


