"""Mappings of a core file, read with pyelftools.

GDB's ``info proc mappings`` lists only file-backed mappings of a core, yet JIT code
lives in anonymous memory: the core's PT_LOAD segments (with their permission flags) are
the full picture, and the NT_FILE note says which of them a file backs (a core without
one: core_link_map finds the files from the auxv and the dynamic linker's list).
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import bisect
import struct
from typing import List, Optional, Tuple

from ..elf.notes import (NT_AUXV, NT_FILE, PT_LOAD, PT_NOTE, file_entries, note_bodies,
                         program_headers)
from ..elf.pyelftools_errors import pyelftools_errors
from ..file_cache import FileCache
from ..model import Mapping
from .core_link_map import last_library, mapped_files
from .process_root import host_path

AT_SYSINFO_EHDR = 33  # auxv entry: where the vDSO's ELF header is
PF_X, PF_W, PF_R = 1, 2, 4
# x86-64's upper half: a core's segment there is [vsyscall], kernel code, not JIT code.
KERNEL_SPACE = 0xFFFF800000000000


def _perms(flags: int) -> str:
    return (("r" if flags & PF_R else "-") + ("w" if flags & PF_W else "-")
            + ("x" if flags & PF_X else "-") + "p")


def _auxv_value(desc, wanted: int) -> Optional[int]:
    """An auxv entry's value; pyelftools before 0.30 hands auxv over as raw bytes."""
    if isinstance(desc, (bytes, bytearray)):
        for offset in range(0, len(desc) - 15, 16):
            key, value = struct.unpack_from("<QQ", desc, offset)
            if key == wanted:
                return value
        return None
    for entry in desc:
        if entry["a_type"] in (wanted, "AT_SYSINFO_EHDR"):
            return entry["a_val"]
    return None


def read_core_mappings(path: str, sysroot: str = "", executable: Optional[str] = None
                       ) -> Tuple[List[Mapping], List[int]]:
    """Return the core's mappings and the starts of its anonymous-looking executable
    mappings that hold no JIT code (the vDSO, else an emulator's signal trampoline; a
    file's code segment the core has no contents of, when no file list says whose it
    is).

    Without an NT_FILE note the files are found from the auxv and the dynamic linker's
    list (core_link_map), ``sysroot`` and ``executable`` helping find them here.
    Raises OSError when the file cannot be read and ImportError when pyelftools is
    missing; callers turn both into a one-line message.
    """
    with open(path, "rb") as handle:
        try:
            files, vdso, loads = _read_headers(handle, sysroot, executable)
        except ValueError:  # not a 64-bit little-endian core: pyelftools reads it
            handle.seek(0)
            files, vdso, loads = _read_with_pyelftools(handle)
            trampolines = []
        else:
            trampolines = [] if vdso else _sigreturn_pages(handle, loads)
    mappings, not_jit = [], ([vdso] if vdso else []) + trampolines
    for start, memsz, flags, filesz in loads:
        end = start + memsz
        name, offset = next(((f, o + start - s) for s, e, f, o in files if s <= start < e),
                            ("", 0))
        if start >= KERNEL_SPACE:  # the kernel's legacy page, as /proc/PID/maps names it
            name = "[vsyscall]"
        elif not name and not filesz and flags & PF_X:
            # Executable memory left out of the dump is a file's code (anonymous memory
            # is always dumped): never JIT code, even when no list says whose it is.
            not_jit.append(start)
        mappings.append(Mapping(start, end, _perms(flags), name, offset))
    return mappings + _undumped_file_mappings(files, mappings), not_jit


# The signal return trampolines an emulator maps in place of the vDSO (qemu-user: one
# page starting with rt_sigreturn): anonymous executable memory, yet no JIT code.
SIGRETURN_TRAMPOLINES = (
    bytes.fromhex("681180d2010000d4"),  # aarch64: mov x8, #139; svc #0
    bytes.fromhex("b80f0000000f05"),    # x86-64: mov $15, %eax; syscall
)


def _sigreturn_pages(handle, loads) -> List[int]:
    """Starts of the one-page executable segments of a core without a vDSO that hold a
    signal return trampoline."""
    pages = [start for start, memsz, flags, filesz in loads
             if flags & PF_X and filesz == memsz == 0x1000 and start < KERNEL_SPACE]
    if not pages:
        return []
    handle.seek(0)
    read = _core_memory(handle, program_headers(handle))
    return [start for start in pages
            if (read(start, 16) or b"").startswith(SIGRETURN_TRAMPOLINES)]




def _read_headers(handle, sysroot: str = "", executable: Optional[str] = None
                  ) -> Tuple[List[Tuple[int, int, str, int]], Optional[int],
                             List[Tuple[int, int, int, int]]]:
    """(mapped files as (start, end, path, file offset), the vDSO address, PT_LOAD
    segments as (vaddr, memsz, flags, filesz)) read with struct: a core of many threads
    has hundreds of segments and notes, which pyelftools parses at tens of ms.  Raises
    ValueError for a file that is not a 64-bit little-endian ELF file."""
    headers = program_headers(handle)
    files, auxv = _core_notes(handle, headers)
    if not files:
        files = core_file_list(handle, headers, auxv, sysroot, executable)
    elif sysroot:  # the files the core names, under the sysroot: never this machine's
        files = [(start, end, host_path(sysroot, path), offset)
                 for start, end, path, offset in files]
    loads = [(vaddr, memsz, flags, filesz) for kind, flags, _offset, vaddr, _paddr, filesz,
             memsz, _align in headers if kind == PT_LOAD]
    return files, _auxv_value(auxv, AT_SYSINFO_EHDR), loads


def _core_notes(handle, headers, size: Optional[int] = None
                ) -> Tuple[List[Tuple[int, int, str, int]], bytes]:
    """The NT_FILE entries and the NT_AUXV body of a core's notes (those within
    ``size`` bytes of the file, when given)."""
    files: List[Tuple[int, int, str, int]] = []
    auxv = b""
    for kind, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align in headers:
        if kind == PT_NOTE and (size is None or offset + filesz <= size):
            handle.seek(offset)
            for note, body in note_bodies(handle.read(filesz)):
                if note == NT_FILE:
                    files += file_entries(body)
                elif note == NT_AUXV:
                    auxv = body
    return files, auxv


def auxv_pairs(body: bytes) -> List[Tuple[int, int]]:
    """An NT_AUXV body as (type, value) pairs."""
    return [struct.unpack_from("<QQ", body, offset) for offset in range(0, len(body) - 15, 16)]


def _core_memory(handle, headers):
    """read(address, size) over the bytes the core holds (None where it holds none)."""
    dumped = sorted((vaddr, vaddr + filesz, offset) for kind, _flags, offset, vaddr, _paddr,
                    filesz, _memsz, _align in headers if kind == PT_LOAD and filesz)
    starts = [start for start, _end, _offset in dumped]

    def read(address: int, size: int) -> Optional[bytes]:
        index = bisect.bisect_right(starts, address) - 1
        if index < 0 or address >= dumped[index][1]:
            return None
        start, end, offset = dumped[index]
        handle.seek(offset + address - start)
        return handle.read(min(size, end - address)) or None

    return read


def core_file_list(handle, headers, auxv: bytes, sysroot: str = "",
                   executable: Optional[str] = None) -> List[Tuple[int, int, str, int]]:
    """The mapped files of a core without an NT_FILE note, found through its auxv and
    the dynamic linker's list in its memory (read from ``handle``)."""
    return mapped_files(_core_memory(handle, headers), auxv_pairs(auxv), sysroot, executable)


def last_library_without_vdso(path: str, sysroot: str = "",
                              executable: Optional[str] = None) -> Optional[str]:
    """For a core without a vDSO (qemu's): the last library a debugger loads of it, as
    the process named it; None for a core with a vDSO (its object file comes last) or
    when the core does not say or cannot be read.  Read once per core."""
    return _LAST_LIBRARY.get(path, lambda core: _last_library(core, sysroot, executable),
                             None)


_LAST_LIBRARY: FileCache[Optional[str]] = FileCache(limit=8)


def _last_library(path: str, sysroot: str, executable: Optional[str]) -> Optional[str]:
    with open(path, "rb") as handle:
        headers = program_headers(handle)
        _files, auxv = _core_notes(handle, headers)
        if not auxv or _auxv_value(auxv, AT_SYSINFO_EHDR):
            return None
        return last_library(_core_memory(handle, headers), auxv_pairs(auxv), sysroot,
                            executable)


def _read_with_pyelftools(handle) -> Tuple[List[Tuple[int, int, str, int]], Optional[int],
                                           List[Tuple[int, int, int, int]]]:
    """What _read_headers reads, through pyelftools (any ELF class and byte order)."""
    from elftools.elf.elffile import ELFFile  # imported lazily: cores only
    from elftools.elf.segments import NoteSegment

    elf = ELFFile(handle)
    files: List[Tuple[int, int, str, int]] = []  # start, end, path, file offset
    vdso = None
    for segment in elf.iter_segments():
        if segment["p_type"] != "PT_NOTE" or not isinstance(segment, NoteSegment):
            continue
        for note in segment.iter_notes():
            if note["n_type"] == "NT_FILE":
                desc = note["n_desc"]
                page = desc["page_size"]
                for entry, name in zip(desc["Elf_Nt_File_Entry"], desc["filename"]):
                    if isinstance(name, bytes):
                        name = name.decode("utf-8", "replace")
                    files.append((entry["vm_start"], entry["vm_end"], name,
                                  entry["page_offset"] * page))
            elif note["n_type"] == "NT_AUXV":
                vdso = _auxv_value(note["n_desc"], AT_SYSINFO_EHDR) or vdso
    loads = [(segment["p_vaddr"], segment["p_memsz"], segment["p_flags"], segment["p_filesz"])
             for segment in elf.iter_segments() if segment["p_type"] == "PT_LOAD"]
    return files, vdso, loads


def _undumped_file_mappings(files, dumped: List[Mapping]) -> List[Mapping]:
    """File mappings the core has no segment for.  GDB's gcore leaves out read-only
    file-backed mappings (library code among them), yet return addresses point there;
    their permissions come from the mapped file's own program headers."""
    missing = []
    for start, end, path, offset in files:
        if any(m.start < end and start < m.end for m in dumped):
            continue
        missing.append(Mapping(start, end, _file_perms(path, offset, end - start), path,
                               offset))
    return missing


def _file_perms(path: str, offset: int, size: int) -> str:
    """Permissions of ``size`` bytes of ELF file ``path`` mapped from ``offset``."""
    segments = _segments.get(path, _load_segments, None)
    if segments is None:  # unreadable or not ELF: assume code, it is file-backed anyway
        return "r-xp"
    for seg_offset, seg_size, flags in segments:
        if seg_offset < offset + size and offset < seg_offset + max(seg_size, 1):
            return _perms(flags)
    return "r--p"


# Per mapped file: (file offset, file size, flags) of each PT_LOAD; None when unreadable.
_segments: FileCache[Optional[List[Tuple[int, int, int]]]] = FileCache()


def _load_segments(path: str) -> List[Tuple[int, int, int]]:
    with open(path, "rb") as handle:
        try:
            return [(offset, filesz, flags) for kind, flags, offset, _vaddr, _paddr,
                    filesz, _memsz, _align in program_headers(handle) if kind == PT_LOAD]
        except ValueError:  # another ELF class or byte order, else not ELF at all
            handle.seek(0)
            if handle.read(4) != b"\x7fELF":
                raise
            handle.seek(0)
            try:
                from elftools.elf.elffile import ELFFile
                return [(seg["p_offset"], seg["p_filesz"], seg["p_flags"]) for seg in
                        ELFFile(handle).iter_segments() if seg["p_type"] == "PT_LOAD"]
            # No pyelftools, or headers it cannot read either: FileCache's failure.
            except pyelftools_errors(ImportError) as error:
                raise ValueError(f"{path}: {error}") from None


AT_ENTRY, AT_EXECFN = 9, 31
ET_CORE = 4


def core_executable(path: str) -> Optional[str]:
    """The path of the program a core file was made of, None when the core does not say.

    The file NT_FILE maps the auxv's AT_ENTRY from is the executable, by its absolute
    path as the kernel resolved it; AT_EXECFN (the name given to execve, possibly
    relative) is the fallback.  Raises OSError when the file cannot be read and
    ValueError when it is not a 64-bit little-endian core file."""
    with open(path, "rb") as handle:
        headers = program_headers(handle)
        handle.seek(16)
        if struct.unpack("<H", handle.read(2))[0] != ET_CORE:
            raise ValueError("not a core file")
        files, auxv = _core_notes(handle, headers)
        entry = _auxv_value(auxv, AT_ENTRY)
        if entry:
            named = [name for start, end, name, _ in files if start <= entry < end]
            if named:
                return named[0]
        execfn = _auxv_value(auxv, AT_EXECFN)
        return _string_at(handle, headers, execfn) if execfn else None


def _string_at(handle, headers, address: int) -> Optional[str]:
    """The NUL-terminated string at ``address`` of the core's memory, None when the core
    holds no bytes there."""
    for kind, _flags, offset, vaddr, _paddr, filesz, _memsz, _align in headers:
        if kind == PT_LOAD and vaddr <= address < vaddr + filesz:
            handle.seek(offset + address - vaddr)
            text = handle.read(min(4096, vaddr + filesz - address)).split(b"\0")[0]
            return text.decode("utf-8", "replace") or None
    return None
