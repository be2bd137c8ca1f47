"""The streams of a Linux minidump a walk needs, as Breakpad, Crashpad and LLDB's
``process save-core`` write them: the threads and their register contexts, the memory
(the memory list, which holds the stacks, and the 64-bit memory list of a full dump),
the modules with their build IDs, the process's /proc/PID/maps, auxv and status, its
processor.  Read with struct over the file's bytes, every count bounded: a stream cut
short or missing gives less, never an error."""

import struct
from typing import Dict, List, Optional, Tuple

from ..coreread.image import AARCH64_REGS, EM_AARCH64, EM_X86_64, Segment

THREAD_LIST, MODULE_LIST, MEMORY_LIST, SYSTEM_INFO, MEMORY64_LIST, MISC_INFO = 3, 4, 5, 7, 9, 15
LINUX_PROC_STATUS, LINUX_AUXV, LINUX_MAPS = 0x47670004, 0x47670008, 0x47670009
# SystemInfo's ProcessorArchitecture: AMD64; ARM64 as Windows and LLDB write it, and
# Breakpad's older value (whose context puts x0-x30, sp and pc at the same offsets).
CPU_AMD64, CPU_ARM64, CPU_ARM64_OLD = 9, 12, 0x8003
MACHINES = {CPU_AMD64: EM_X86_64, CPU_ARM64: EM_AARCH64, CPU_ARM64_OLD: EM_AARCH64}
MAX_ENTRIES = 1 << 16  # threads, modules, memory ranges
MAX_TEXT = 64 << 20

# CONTEXT_AMD64 (Breakpad's MDRawContextAMD64, LLDB's MinidumpContext_x86_64): where
# each general register is.  LLDB's own, shorter context (its flag 0x80000000, 736
# bytes) adds fs_base and gs_base after the SSE registers.
_AMD64 = {"eflags": (68, "<I"), "cs": (56, "<H"), "ds": (58, "<H"), "es": (60, "<H"),
          "fs": (62, "<H"), "gs": (64, "<H"), "ss": (66, "<H")}
for _index, _name in enumerate(("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
                                "rip")):
    _AMD64[_name] = (120 + 8 * _index, "<Q")
AMD64_CONTEXT_SIZE = 256  # up to rip
LLDB_CONTEXT, LLDB_AMD64_SIZE, LLDB_FS_BASE = 0x80000000, 736, 720
ARM64_CONTEXT_SIZE = 8 + 8 * 33  # flags, cpsr; x0-x30, sp, pc


class ThreadContext:
    __slots__ = ("tid", "registers", "stack")

    def __init__(self, tid: int, registers: Dict[str, int], stack: Optional[Segment]):
        self.tid, self.registers, self.stack = tid, registers, stack


class Module:
    __slots__ = ("start", "end", "path", "build_id")

    def __init__(self, start: int, end: int, path: str, build_id: Optional[str]):
        self.start, self.end, self.path, self.build_id = start, end, path, build_id


class Streams:
    """The streams of the minidump whose bytes are ``data`` (``directory``: type ->
    (size, offset), from ``regions.minidump.stream_directory``)."""

    def __init__(self, data, directory: Dict[int, Tuple[int, int]]):
        self.data = data
        self.directory = directory

    def raw(self, kind: int, limit: int = MAX_TEXT) -> bytes:
        size, offset = self.directory.get(kind, (0, 0))
        return bytes(self.data[offset:offset + min(size, limit)])

    def _count(self, kind: int, width: int = 4) -> Tuple[int, int]:
        """(entries, offset of the first) of a list stream."""
        size, offset = self.directory.get(kind, (0, 0))
        if size < width:
            return 0, 0
        count = int.from_bytes(bytes(self.data[offset:offset + width]), "little")
        return min(count, MAX_ENTRIES), offset + width

    def size_needed(self) -> int:
        """The bytes the file needs for its streams and the memory they list."""
        ends = [offset + size for size, offset in self.directory.values()]
        ends += [segment.offset + segment.end - segment.start for segment in self.memory()]
        return max(ends, default=0)

    def machine(self) -> int:
        """The ELF e_machine of the processor (0 for one we do not read)."""
        info = self.raw(SYSTEM_INFO, 2)
        return MACHINES.get(struct.unpack("<H", info)[0], 0) if len(info) == 2 else 0

    def pid(self) -> Optional[int]:
        """MiscInfo's process id, else the status stream's Tgid."""
        misc = self.raw(MISC_INFO, 12)
        if len(misc) == 12 and struct.unpack_from("<I", misc, 4)[0] & 1:
            return struct.unpack_from("<I", misc, 8)[0]
        for line in self.raw(LINUX_PROC_STATUS, 1 << 16).decode("utf-8", "replace").splitlines():
            name, _, value = line.partition(":")
            if name == "Tgid" and value.strip().isdigit():
                return int(value)
        return None

    def maps_text(self) -> str:
        return self.raw(LINUX_MAPS).decode("utf-8", "replace")

    def auxv(self) -> bytes:
        return self.raw(LINUX_AUXV, 1 << 16)

    def memory(self) -> List[Segment]:
        """Each range the dump holds (start, end, offset in the file)."""
        ranges = []
        count, at = self._count(MEMORY_LIST)
        for index in range(count):
            entry = bytes(self.data[at + 16 * index:at + 16 * index + 16])
            if len(entry) == 16:
                start, size, rva = struct.unpack("<QII", entry)
                ranges.append(Segment(start, start + size, rva, 0))
        count, at = self._count(MEMORY64_LIST, 8)
        base = bytes(self.data[at:at + 8])
        if len(base) == 8:
            rva = struct.unpack("<Q", base)[0]
            for index in range(count):
                entry = bytes(self.data[at + 8 + 16 * index:at + 24 + 16 * index])
                if len(entry) != 16:
                    break
                start, size = struct.unpack("<QQ", entry)
                ranges.append(Segment(start, start + size, rva, 0))
                rva += size  # the ranges' bytes follow one another
        return ranges

    def threads(self, machine: int) -> List[ThreadContext]:
        found = []
        count, at = self._count(THREAD_LIST)
        for index in range(count):
            entry = bytes(self.data[at + 48 * index:at + 48 * index + 48])
            if len(entry) != 48:
                break
            tid, stack_start, stack_size, stack_rva, size, rva = struct.unpack_from(
                "<I20xQIIII", entry)
            context = bytes(self.data[rva:rva + size])
            registers = (_aarch64(context) if machine == EM_AARCH64 else _amd64(context))
            stack = Segment(stack_start, stack_start + stack_size, stack_rva, 0) \
                if stack_size else None
            found.append(ThreadContext(tid, registers, stack))
        return found

    def modules(self) -> List[Module]:
        found = []
        count, at = self._count(MODULE_LIST)
        for index in range(count):
            entry = bytes(self.data[at + 108 * index:at + 108 * index + 108])
            if len(entry) != 108:
                break
            start, size, _sum, _stamp, name_rva = struct.unpack_from("<QIIII", entry)
            cv_size, cv_rva = struct.unpack_from("<II", entry, 76)
            found.append(Module(start, start + size, self._string(name_rva),
                                self._build_id(cv_rva, min(cv_size, 1024))))
        return found

    def _string(self, rva: int) -> str:
        size = bytes(self.data[rva:rva + 4])
        if len(size) != 4:
            return ""
        length = min(struct.unpack("<I", size)[0], 1 << 16)
        return bytes(self.data[rva + 4:rva + 4 + length]).decode("utf-16-le", "replace")

    def _build_id(self, rva: int, size: int) -> Optional[str]:
        """The module's GNU build ID: Breakpad's ELF CodeView record ('BpEL' and the
        ID), as Crashpad and LLDB write it too."""
        record = bytes(self.data[rva:rva + size])
        if len(record) > 4 and record[:4] == b"LEpB":
            return record[4:].hex()
        return None


def _amd64(context: bytes) -> Dict[str, int]:
    if len(context) < AMD64_CONTEXT_SIZE:
        return {}
    registers = {name: struct.unpack_from(form, context, at)[0]
                 for name, (at, form) in _AMD64.items()}
    flags = struct.unpack_from("<I", context, 48)[0]
    if flags & LLDB_CONTEXT and len(context) >= LLDB_AMD64_SIZE:
        registers["fs_base"], registers["gs_base"] = struct.unpack_from(
            "<QQ", context, LLDB_FS_BASE)
    return registers


def _aarch64(context: bytes) -> Dict[str, int]:
    if len(context) < ARM64_CONTEXT_SIZE:
        return {}
    values = struct.unpack_from("<33Q", context, 8)
    return dict(zip(AARCH64_REGS, values))  # x0-x30, sp, pc (pstate: not read)
