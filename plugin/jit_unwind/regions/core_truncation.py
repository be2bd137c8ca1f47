"""Whether a core file was cut short, and which of the process's memory that cost.

A core written to a full disk, or cut by a size limit (``ulimit -c``, systemd-coredump's
``ProcessSizeMax``), keeps its headers and notes (registers) but loses the load segments
stored after the cut: the debugger then reads no stack past the cut, or finds
``_PyRuntime`` "not initialised yet" where its bytes are simply missing.  The program
headers say how long the file should be (the last PT_LOAD's p_offset + p_filesz)."""

import os
from ..records import field, record
from typing import List, Optional, Sequence, Tuple

from ..file_cache import FileCache
from ..elf.notes import PT_LOAD, program_headers
from .corefile import _core_notes, core_file_list


@record(frozen=True)
class CutSegment:
    """A load segment whose bytes the file lacks (all of them, or those after ``kept``)."""

    start: int
    end: int
    path: str  # the file mapped there (NT_FILE or the link_map), "" for anonymous memory
    kept: int  # bytes of it the file still holds

    def loses(self, address: int, upward: bool) -> bool:
        """The bytes at ``address`` are lost, or (``upward``: a stack, whose callers'
        frames lie above the stack pointer) some between it and the segment's end."""
        if not self.start <= address < self.end:
            return False
        return upward or address >= self.start + self.kept


@record(frozen=True)
class Truncation:
    path: str
    size: int  # bytes the file has
    needed: int  # bytes its program headers need
    cut: List[CutSegment] = field(default_factory=list)


def _read(path: str) -> Optional[Truncation]:
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        headers = program_headers(handle)
        files, auxv = _core_notes(handle, headers, size)
        if not files and _cut_short(headers, size):
            files = core_file_list(handle, headers, auxv)
    loads = [(offset, vaddr, filesz) for kind, _flags, offset, vaddr, _paddr, filesz, _memsz,
             _align in headers if kind == PT_LOAD and filesz]
    needed = max((offset + filesz for offset, _vaddr, filesz in loads), default=0)
    if needed <= size:
        return None
    cut = []
    for offset, vaddr, filesz in loads:
        if offset + filesz > size:
            name = next((f for s, e, f, _o in files if s <= vaddr < e), "")
            cut.append(CutSegment(vaddr, vaddr + filesz, name, max(0, size - offset)))
    return Truncation(path, size, needed, cut)


def _cut_short(headers, size: int) -> bool:
    return any(kind == PT_LOAD and offset + filesz > size
               for kind, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align in headers)


_TRUNCATIONS: FileCache[Optional[Truncation]] = FileCache(limit=16)


def core_truncation(path: str) -> Optional[Truncation]:
    """The core at ``path`` is truncated: what it lacks; None when it is whole (or is no
    64-bit core file this can read)."""
    return _TRUNCATIONS.get(path, _read, None)


# At most this many missing places named one by one; the rest are counted.
_NAMED = 4


def describe(truncation: Truncation, places: Sequence[Tuple[int, str, bool]] = ()) -> str:
    """One sentence for the user: the sizes, then what is missing, naming the
    ``places`` ((address, what is there, upward), e.g. (a thread's stack pointer, "the
    stack of thread 1", True), (_PyRuntime's address, "_PyRuntime", False)) that lie in
    lost bytes, with the address range lost."""
    lost: List[Tuple[CutSegment, str]] = []
    for address, what, upward in places:
        segment = next((s for s in truncation.cut if s.loses(address, upward)), None)
        if segment is not None and len(lost) < _NAMED:
            where = f" in {os.path.basename(segment.path)}" if segment.path else ""
            lost.append((segment, f"{what}{where} ({segment.start + segment.kept:#x}-"
                                  f"{segment.end:#x})"))
    named = {segment for segment, _text in lost}
    others = [s for s in truncation.cut if s not in named]
    parts = [text for _segment, text in lost]
    if others:
        count = len(others)
        missing = sum(s.end - s.start - s.kept for s in others)
        parts.append(f"{'' if not parts else 'and '}{count} "
                     f"{'other ' if parts else ''}segment{'s' if count != 1 else ''} of "
                     f"memory ({_size(missing)})")
    return (f"the core file {truncation.path} is truncated: it has {truncation.size} bytes, "
            f"its program headers need {truncation.needed}; missing: {', '.join(parts)}")


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"
