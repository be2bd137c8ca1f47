"""The parts of a core file a debugger reads, parsed once: PT_LOAD segments, NT_FILE's
mapped files (else those the auxv and the dynamic linker's list give), each thread's
registers (NT_PRSTATUS, in the core's order: GDB's thread numbers), as the core's
processor (x86-64, aarch64) lays them out."""

import bisect
import mmap
import os
import struct
from typing import Dict, List, Optional

from ..regions.core_link_map import mapped_files
from ..elf.notes import (NT_AUXV, NT_FILE, PT_LOAD, PT_NOTE, file_entries, note_bodies,
                         program_headers)
from ..regions.corefile import auxv_pairs
from ..regions.process_root import host_path

NT_PRSTATUS, NT_PRPSINFO = 1, 3
PRPSINFO_PID = 24  # pr_pid in x86-64's struct elf_prpsinfo
# user_regs_struct of x86-64, as NT_PRSTATUS's pr_reg holds it (from byte 112).
USER_REGS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax",
             "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
             "fs_base", "gs_base", "ds", "es", "fs", "gs")
# user_pt_regs of aarch64: x0-x30, sp, pc, pstate (the same offset in elf_prstatus).
AARCH64_REGS = (*(f"x{number}" for number in range(31)), "sp", "pc", "pstate")
EM_X86_64, EM_AARCH64 = 62, 183
REGISTER_LAYOUTS = {EM_X86_64: USER_REGS, EM_AARCH64: AARCH64_REGS}
PR_REG, PR_PID = 112, 32


# Plain classes, not dataclasses: making a dataclass costs ~1 ms of every run's start.
class Segment:
    __slots__ = ("start", "end", "offset", "flags")

    def __init__(self, start: int, end: int, offset: int, flags: int):
        self.start = start
        self.end = end  # start + filesz: bytes the core holds
        self.offset = offset
        self.flags = flags


class FileMapping:
    __slots__ = ("start", "end", "path", "offset")

    def __init__(self, start: int, end: int, path: str, offset: int):
        self.start, self.end, self.path, self.offset = start, end, path, offset

    def __repr__(self) -> str:
        return f"FileMapping({self.start:#x}, {self.end:#x}, {self.path!r}, {self.offset:#x})"


class ThreadRegisters:
    __slots__ = ("pid", "registers")

    def __init__(self, pid: int, registers: Dict[str, int]):
        self.pid = pid
        self.registers = registers


def _contents(path: str):
    """The file's bytes, mapped rather than read: a core is often hundreds of MB of which
    a walk reads a few pages."""
    with open(path, "rb") as handle:
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):  # empty, or a file system without mmap
            handle.seek(0)
            return handle.read()


class AddressIndex:
    """The memory segments and mapped files of a process's image, each sorted by start
    (``segments``, ``files``, their starts in ``_starts`` and ``_file_starts``), looked
    up by address: a core's and a minidump's."""

    segments: List[Segment]
    files: List[FileMapping]
    _starts: List[int]
    _file_starts: List[int]

    def segment_at(self, address: int) -> Optional[Segment]:
        index = bisect.bisect_right(self._starts, address) - 1
        if index >= 0 and address < self.segments[index].end:
            return self.segments[index]
        return None

    def file_at(self, address: int) -> Optional[FileMapping]:
        index = bisect.bisect_right(self._file_starts, address) - 1
        if index >= 0 and address < self.files[index].end:
            return self.files[index]
        return None


class CoreImage(AddressIndex):
    """A core file's segments, mapped files and threads.  Raises OSError when it cannot
    be read and ValueError when it is no 64-bit little-endian ELF file."""

    def __init__(self, path, executable: Optional[str] = None, sysroot: str = ""):
        """``sysroot``: where the files the core names are (a core of another machine's
        processor: qemu-aarch64's; of a process in a container: its root)."""
        self.path = os.fspath(path)
        self.auxv = b""
        self.data = _contents(self.path)
        self.segments: List[Segment] = []
        self.files: List[FileMapping] = []
        self.threads: List[ThreadRegisters] = []
        self.pid: Optional[int] = None  # the process's, from NT_PRPSINFO
        with open(self.path, "rb") as handle:
            headers = program_headers(handle)
            handle.seek(18)
            self.machine = struct.unpack("<H", handle.read(2))[0]
        self.layout = REGISTER_LAYOUTS.get(self.machine, USER_REGS)
        for kind, flags, offset, vaddr, _paddr, filesz, _memsz, _align in headers:
            if kind == PT_LOAD and filesz:
                self.segments.append(Segment(vaddr, vaddr + filesz, offset, flags))
            elif kind == PT_NOTE:
                self._notes(bytes(self.data[offset:offset + filesz]))
        self.segments.sort(key=lambda s: s.start)
        self._starts = [s.start for s in self.segments]
        self.sysroot = sysroot
        if self.files and sysroot:  # the files NT_FILE names, under the sysroot only
            self.files = [FileMapping(f.start, f.end, host_path(sysroot, f.path), f.offset)
                          for f in self.files]
        if not self.files:  # no NT_FILE note (qemu's cores): the files from memory
            self.files = [FileMapping(start, end, path, offset) for start, end, path, offset
                          in mapped_files(self._read, auxv_pairs(self.auxv), sysroot,
                                          executable)]
        self.files.sort(key=lambda f: f.start)
        self._file_starts = [f.start for f in self.files]

    def _notes(self, data: bytes) -> None:
        for kind, body in note_bodies(data):
            layout = self.layout
            if kind == NT_PRSTATUS and len(body) >= PR_REG + 8 * len(layout):
                values = struct.unpack_from(f"<{len(layout)}Q", body, PR_REG)
                pid = struct.unpack_from("<i", body, PR_PID)[0]
                self.threads.append(ThreadRegisters(pid, dict(zip(layout, values))))
            elif kind == NT_PRPSINFO and len(body) >= PRPSINFO_PID + 4:
                self.pid = struct.unpack_from("<i", body, PRPSINFO_PID)[0]
            elif kind == NT_AUXV:
                self.auxv = body
            elif kind == NT_FILE:
                self.files += [FileMapping(start, end, path, offset)
                               for start, end, path, offset in file_entries(body)]

    def _read(self, address: int, size: int) -> Optional[bytes]:
        segment = self.segment_at(address)
        if segment is None:
            return None
        at = segment.offset + address - segment.start
        return bytes(self.data[at:at + min(size, segment.end - address)])

    def stack_segment(self, thread: int = 0) -> Optional[Segment]:
        registers = self.threads[thread].registers
        return self.segment_at(registers.get("rsp", registers.get("sp", 0)))
