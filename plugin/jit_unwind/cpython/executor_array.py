"""CPython 3.15's executors: ``PyInterpreterState.executor_ptrs[executor_count]``, the
deletion list and the interpreter's two cold executors (layout notes in
:mod:`.executors`).

Each array slot's executor says its own slot (``vm_data.bloom_array_idx``): that is
what tells a probed offset (no DWARF) from bytes that only look like the array.
Every read is bounded and none raises: a reason string says what stopped a walk.
"""

import struct
from typing import List, Optional, Tuple

from ..target import MemoryReadError
from .executor_layout import MAX_ARRAY
from .executor_reader import EXECUTOR_TYPE_NAME, ExecutorReader, RawExecutor

__all__ = ["array_fields", "walk_array", "COLD_NAMES"]

# The interpreter's shared executors, after the array (cold_executor,
# cold_dynamic_executor): the side exits that are not compiled yet jump to them.
COLD_NAMES = ("<cold exit>", "<cold dynamic exit>")
MAX_DELETION_LIST = 100_000


def _array(reader: ExecutorReader, interp: int, fields: Tuple[int, ...]
           ) -> Tuple[Optional[List[int]], str]:
    """The executor pointers of the array at ``fields``, or None and why not."""
    memory = reader.memory
    pointers = memory.try_read_u64(interp + fields[0])
    count = memory.try_read_u64(interp + fields[1])
    if pointers is None or count is None:
        return None, f"cannot read executor_ptrs of interpreter {interp:#x}"
    if count > MAX_ARRAY or (count and (pointers == 0 or pointers % 8)):
        return None, (f"executor_ptrs {pointers:#x} with executor_count {count} of "
                      f"interpreter {interp:#x} is no array")
    if count == 0:
        return [], ""
    data = memory.try_read(pointers, 8 * count)
    if data is None:
        return None, f"cannot read the {count} executor pointers at {pointers:#x}"
    return list(struct.unpack(f"<{count}Q", data)), ""


def _slot_problem(reader: ExecutorReader, address: int, index: int) -> str:
    """Why ``address`` cannot be the executor of array slot ``index``."""
    if address == 0 or address % 8:
        return f"executor_ptrs[{index}] is {address:#x}"
    name = reader.type_name(address)
    if name != EXECUTOR_TYPE_NAME:
        return f"executor_ptrs[{index}] at {address:#x} is a {name!r}"
    offset = reader.layout.array_index
    if offset is not None:
        data = reader.memory.try_read(address + offset, 4)
        if data is None or struct.unpack("<i", data)[0] != index:
            return f"executor_ptrs[{index}] at {address:#x} is in another slot"
    return ""


def _cold_executors(reader: ExecutorReader, interp: int, fields: Tuple[int, ...]
                    ) -> Tuple[Optional[int], str]:
    """How many of the interpreter's cold executors are set, or None and why they
    cannot be its cold executors."""
    count = 0
    for offset in fields[3:]:
        address = reader.memory.try_read_u64(interp + offset)
        if address is None:
            return None, f"cannot read the cold executors of interpreter {interp:#x}"
        if address and reader.type_name(address) != EXECUTOR_TYPE_NAME:
            return None, f"cold executor {address:#x} is no {EXECUTOR_TYPE_NAME}"
        count += bool(address)
    return count, ""


def array_fields(reader: ExecutorReader, interp: int) -> Tuple[Optional[Tuple[int, ...]], str]:
    """Offsets of the array and what follows it in ``interp``: DWARF's, else after
    ``common_consts`` where the array's first slot or a cold executor says so (zeros
    say nothing: with no executor yet there is nothing to find anyway, and
    ``(None, "")`` says that)."""
    layout = reader.layout
    fields = layout.array_fields(None)
    if fields is not None:
        return fields, ""
    searched, problems = False, []
    for consts in reader.common_consts_candidates(interp):
        searched = True
        fields = layout.array_fields(consts)
        if fields is None:
            break
        pointers, problem = _array(reader, interp, fields)
        cold, cold_problem = _cold_executors(reader, interp, fields)
        if pointers and not problem:
            problem = _slot_problem(reader, pointers[0], 0)
        problem = problem or cold_problem
        if not problem and (pointers or cold):
            return fields, ""
        if problem:
            problems.append(problem)
    if problems:
        return None, (f"no executor array after PyInterpreterState.common_consts of "
                      f"interpreter {interp:#x} ({problems[-1]})")
    return None, "" if searched else reader.consts_problem(interp)


def _deletion_list(reader: ExecutorReader, head: int, budget: int) -> Tuple[List[int], str]:
    """Executors invalidated but not freed yet (a trace of one may still run)."""
    found: List[int] = []
    seen = set()
    address = head
    while address:
        if len(found) >= min(budget, MAX_DELETION_LIST) or address in seen:
            return found, f"executor deletion list too long or looping at {address:#x}"
        if address % 8 or reader.type_name(address) != EXECUTOR_TYPE_NAME:
            return found, f"{address:#x} in the executor deletion list is no executor"
        seen.add(address)
        found.append(address)
        following = reader.memory.try_read_u64(address + reader.layout.links_next)
        if following is None:
            return found, f"cannot read the executor at {address:#x}"
        address = following
    return found, ""


def walk_array(reader: ExecutorReader, interp: int, fields: Tuple[int, ...], budget: int
               ) -> Tuple[List[RawExecutor], List[Tuple[str, RawExecutor]], int, str]:
    """(executors with machine code, the named cold ones, how many have none, why
    the walk stopped early or "")."""
    pointers, reason = _array(reader, interp, fields)
    if pointers is None:
        return [], [], 0, reason
    deleted: List[int] = []
    head = reader.memory.try_read_u64(interp + fields[2])
    if head:
        deleted, reason = _deletion_list(reader, head, budget - len(pointers))
    found: List[RawExecutor] = []
    skipped = 0
    for index, address in enumerate(pointers[:budget] + deleted):
        if index < len(pointers):
            problem = _slot_problem(reader, address, index)
            if problem:
                return found, [], skipped, problem
        try:
            raw = reader.read_raw(address)
        except MemoryReadError:  # the walk ends, what was found stays
            return found, [], skipped, f"cannot read the executor at {address:#x}"
        if raw.jit_code == 0:  # the tier-2 interpreter runs it (JIT off)
            skipped += 1
            continue
        problem = reader.check_machine_code(raw)
        if problem:
            return found, [], skipped, f"executor {address:#x}: {problem}"
        found.append(raw)
    cold = []
    for name, offset in zip(COLD_NAMES, fields[3:]):
        pointer = reader.memory.try_read_u64(interp + offset)
        if not pointer:
            continue
        try:
            raw = reader.read_raw(pointer)
        except MemoryReadError:
            continue
        if raw.jit_code and not reader.check_machine_code(raw):
            cold.append((name, raw))
    if len(pointers) > budget:
        reason = reason or f"more than {reader.max_executors} executors"
    return found, cold, skipped, reason
