"""What ``jit-unwind core`` checks of its input before any debugger reads it: the core
is whole up to its notes (``gcore`` writes them last: a core cut before them has no
threads), the EXECUTABLE is an ELF program, and it is the program the core was made of.

The core's own record of its program: the file NT_FILE maps the auxv's AT_ENTRY from
(else the auxv's AT_EXECFN) and, when the core holds the first page of that mapping (GDB's
``gcore`` and the kernel's default ``coredump_filter`` both write it), the build ID in
the program's notes there.  A given file is the program when its build ID is the core's;
where either has none, when its PT_LOAD segments are laid out as the core's mappings of
the program are (a stripped copy of the same build keeps both).  A core of a program
started through its dynamic linker (``ld.so PROGRAM``) names ld.so: any file the core
maps is then accepted."""

import os
import re
import struct
from typing import Dict, List, Optional, Tuple

from ..elf.notes import PT_LOAD, PT_NOTE, gnu_build_id, program_headers
from .errors import CliError

ET_EXEC, ET_DYN, ET_CORE = 2, 3, 4
PT_INTERP, PT_PHDR = 3, 6
AT_PHDR, AT_ENTRY, AT_EXECFN = 3, 9, 31
MACHINES = {62: "x86-64", 183: "aarch64", 3: "i386", 40: "arm", 243: "riscv"}
# The dynamic linker's names: ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld.so, ld-2.31.so.
_DYNAMIC_LINKER = re.compile(r"^ld(?:-linux[\w-]*|64)?(?:-[\d.]+)?\.so(?:\.\d+)*$")
PAGE_SIZES = (0x1000, 0x4000, 0x10000)


class Mismatch(CliError):
    """The executable is not the program the core was made of (exit 2 unless --force)."""


# -- the core ---------------------------------------------------------------------------

def check_notes(core: str, shown: str) -> None:
    """CliError when the core is cut short before the end of its notes (or its program
    headers): what the core holds of its threads is lost."""
    size = os.path.getsize(core)
    with open(core, "rb") as handle:
        try:
            headers = program_headers(handle)
        except ValueError as error:
            if "cut short" in str(error):
                raise CliError(f"the core file {shown} is truncated: it has {size} bytes, "
                               "fewer than its program headers need") from None
            return  # not ELF64 LE: the machine check says so
    needed = max((offset + filesz for kind, _f, offset, _v, _p, filesz, _m, _a in headers
                  if kind in (PT_LOAD, PT_NOTE)), default=0)
    if any(kind == PT_NOTE and offset + filesz > size
           for kind, _f, offset, _v, _p, filesz, _m, _a in headers):
        raise CliError(f"the core file {shown} is truncated: it has {size} bytes of the "
                       f"{needed} its program headers need, and its notes (the threads' "
                       "registers, the mapped files) are cut off: nothing to read")


class CoreProgram:
    """The core's record of its program: its path, the core's mappings of it, its
    build ID, and the core's machine; and every file the core maps (path -> mappings)."""

    def __init__(self, core: str):
        from ..regions.corefile import _auxv_value, _core_memory, _core_notes, _string_at
        with open(core, "rb") as handle:
            headers = program_headers(handle)
            handle.seek(18)
            self.machine = struct.unpack("<H", handle.read(2))[0]
            files, auxv = _core_notes(handle, headers)
            read = _core_memory(handle, headers)
            self.files: Dict[str, List[Tuple[int, int, int]]] = {}
            for start, end, path, offset in files:
                self.files.setdefault(path, []).append((start, end, offset))
            entry = _auxv_value(auxv, AT_ENTRY) or 0
            self.path: Optional[str] = next(
                (path for start, end, path, _o in files if start <= entry < end), None)
            self.mappings = self.files.get(self.path, []) if self.path else []
            self.build_ids = {path: _mapped_build_id(read, mappings)
                              for path, mappings in self.files.items()}
            # Without NT_FILE (qemu's cores, which hold no code either): where the
            # program's entry point is from its program headers, as the auxv says.
            self.entry_from_headers: Optional[int] = None
            if self.path:
                self.build_id = self.build_ids.get(self.path)
            else:  # the headers AT_PHDR points at
                phdr = _auxv_value(auxv, AT_PHDR) or 0
                self.build_id = _build_id_at(read, phdr & ~0xFFF) if phdr else None
                if phdr and entry:
                    self.entry_from_headers = entry - phdr
            execfn = _auxv_value(auxv, AT_EXECFN)
            name = self.path or (_string_at(handle, headers, execfn) if execfn else None)
        # ``ld.so PROGRAM``: the auxv and the program named are the dynamic linker's.
        self.named_linker = bool(name and _DYNAMIC_LINKER.match(os.path.basename(name)))


def _mapped_build_id(read, mappings) -> Optional[str]:
    start = next((start for start, _end, offset in mappings if offset == 0), None)
    return _build_id_at(read, start) if start is not None else None


def _build_id_at(read, base: int) -> Optional[str]:
    """The build ID of the ELF file whose first bytes the core holds at ``base`` (its
    headers and notes in the first page, as linkers place them); None when it holds no
    such bytes."""
    header = read(base, 64)
    if not header or len(header) < 64 or header[:4] != b"\x7fELF" or header[4:6] != b"\x02\x01":
        return None
    phoff = struct.unpack_from("<Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", header, 54)
    if phentsize < 56 or phnum > 64:
        return None
    table = read(base + phoff, phentsize * phnum) or b""
    for index in range(len(table) // phentsize):
        kind, _flags, offset, _vaddr, _paddr, filesz = struct.unpack_from(
            "<IIQQQQ", table, index * phentsize)
        if kind == PT_NOTE and filesz <= 0x10000:
            found = gnu_build_id(read(base + offset, filesz) or b"")
            if found:
                return found
    return None


# -- the file given ---------------------------------------------------------------------

class GivenFile:
    """An executable's machine, type, size, PT_LOAD layout (file offset, address,
    file size) and build ID."""

    def __init__(self, path: str, machine: int, kind: int, size: int,
                 loads: List[Tuple[int, int, int]], build_id: Optional[str],
                 interpreted: bool = True, entry_from_headers: Optional[int] = None):
        self.path, self.machine, self.kind, self.size = path, machine, kind, size
        self.loads, self.build_id = loads, build_id
        self.entry_from_headers = entry_from_headers  # e_entry - the headers' address
        self.program = kind == ET_EXEC or interpreted  # not a library: it names an ld.so


def read_executable(path: str, core_name: Optional[str] = None) -> GivenFile:
    """The file given as EXECUTABLE; CliError when it is no ELF program (a script, a
    core, an object file, any other file), naming the one the core wants."""
    wanted = f": give the program the core was made of, {core_name}" if core_name else \
        ": give the program the core was made of"
    with open(path, "rb") as handle:
        start = handle.read(64)
        if start[:2] == b"#!":
            line = start[2:].split(b"\n")[0].decode("utf-8", "replace").strip()
            raise CliError(f"{path} is a script (#!{line}), not an executable{wanted}"
                           f"{' (the interpreter that ran it)' if core_name else ''}")
        if start[:4] != b"\x7fELF":
            raise CliError(f"{path} is not an executable (not an ELF file){wanted}")
        if len(start) < 64 or start[4:6] != b"\x02\x01":
            raise CliError(f"{path} is not a 64-bit little-endian ELF executable{wanted}")
        kind, machine = struct.unpack_from("<HH", start, 16)
        if kind == ET_CORE:
            raise CliError(f"{path} is a core file, not an executable (the core comes "
                           "first: jit-unwind core CORE EXECUTABLE)")
        if kind not in (ET_EXEC, ET_DYN):
            raise CliError(f"{path} is an object file, not an executable{wanted}")
        handle.seek(0)
        try:
            headers = program_headers(handle)
        except ValueError as error:
            raise CliError(f"{path} is not a whole ELF executable: {error}") from None
        loads = [(offset, vaddr, filesz) for k, _f, offset, vaddr, _p, filesz, _m, _a
                 in headers if k == PT_LOAD]
        build_id = None
        for k, _f, offset, _v, _p, filesz, _m, _a in headers:
            if k == PT_NOTE and not build_id and filesz <= 0x10000:
                handle.seek(offset)
                build_id = gnu_build_id(handle.read(filesz))
        size = os.fstat(handle.fileno()).st_size
    interpreted = any(k == PT_INTERP for k, *_rest in headers)
    return GivenFile(path, machine, kind, size, loads, build_id, interpreted,
                     _entry_from_headers(start, headers))


def _entry_from_headers(header: bytes, headers) -> Optional[int]:
    """e_entry less the address of the program headers (PT_PHDR's, else where the load
    that holds them puts them)."""
    entry, phoff = struct.unpack_from("<QQ", header, 24)
    phdr = next((vaddr for k, _f, _o, vaddr, _p, _s, _m, _a in headers if k == PT_PHDR),
                None)
    if phdr is None:
        phdr = next((vaddr + phoff - offset for k, _f, offset, vaddr, _p, filesz, _m, _a
                     in headers if k == PT_LOAD and offset <= phoff < offset + filesz), None)
    return entry - phdr if entry and phdr is not None else None


def _laid_out_as(given: GivenFile, mappings: List[Tuple[int, int, int]]) -> bool:
    """The core maps the file's PT_LOAD segments where their addresses and offsets say,
    each from its first page to its last (a segment split by mprotect, as RELRO splits
    the data, still starts and ends there), for some page size."""
    first = next((start for start, _end, offset in mappings if offset == 0), None)
    loads = [(o, v, s) for o, v, s in given.loads if s]
    if first is None or not loads:
        return True  # nothing to compare
    starts = {(start, offset) for start, _end, offset in mappings}
    ends = {end for _start, end, _offset in mappings}
    for page in PAGE_SIZES:
        mask = ~(page - 1)
        zero = next((v for o, v, _s in loads if o & mask == 0), None)
        if zero is None:
            continue
        base = first - (zero & mask)
        if all((base + (v & mask), o & mask) in starts
               and base + ((v + s + page - 1) & mask) in ends for o, v, s in loads):
            return True
    return False


def _same(given: GivenFile, build_id: Optional[str],
          mappings: List[Tuple[int, int, int]]) -> bool:
    if build_id and given.build_id:
        return build_id == given.build_id
    return _laid_out_as(given, mappings)


def _id(build_id: Optional[str]) -> str:
    return f"build ID {build_id}" if build_id else "no build ID"


def mismatch(core: CoreProgram, given: GivenFile) -> Optional[str]:
    """Why ``given`` is not the program ``core`` was made of ("its build ID is ..."); None
    when it is (or the core does not say)."""
    if given.machine != core.machine:
        return (f"it is an {MACHINES.get(given.machine, 'unknown machine')} file, the core "
                f"an {MACHINES.get(core.machine, 'unknown machine')} process's")
    if core.build_id and given.build_id:
        same = core.build_id == given.build_id
        reason = f"its build ID is {given.build_id}"
    elif core.mappings:
        same = _laid_out_as(given, core.mappings)
        reason = "its segments are not where the core maps the program's"
    elif not core.named_linker:  # no file list (qemu's cores): the auxv
        same = _same_entry(core, given)
        reason = "its entry point is not where the core's auxiliary vector has it"
    else:
        same = True
    if same:
        return None
    if core.named_linker and given.program and any(
            _same(given, core.build_ids.get(path), mappings)
            for path, mappings in core.files.items()):
        return None  # `ld.so PROGRAM`: the core names ld.so; the program is among its files
    return reason


def other_builds(core: CoreProgram, sysroot: str = "") -> List[Tuple[str, str, str]]:
    """(path here, build ID in the core, build ID here) of each file the core maps whose
    file here (under ``sysroot``) is another build: a container's libraries read as this
    machine's.  Frames in them would be named and unwound by the wrong file."""
    from ..regions.process_root import NOT_FILES, host_path
    found = []
    for path in sorted(core.files):
        recorded = core.build_ids.get(path)
        if not recorded or not path.startswith("/") or path.startswith(NOT_FILES):
            continue
        here = host_path(sysroot, path)
        identity = _file_build_id(here)
        if identity and identity != recorded:
            found.append((here, recorded, identity))
    return found


def _file_build_id(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            for kind, _f, offset, _v, _p, filesz, _m, _a in program_headers(handle):
                if kind == PT_NOTE and filesz <= 0x10000:
                    handle.seek(offset)
                    identity = gnu_build_id(handle.read(filesz))
                    if identity:
                        return identity
    except (OSError, ValueError, struct.error):
        pass
    return None


def _same_entry(core: CoreProgram, given: GivenFile) -> bool:
    """The auxv's entry point lies where the file's would (after its program headers by
    as many bytes); True when either does not say."""
    if core.entry_from_headers is None or given.entry_from_headers is None:
        return True
    return core.entry_from_headers == given.entry_from_headers


def wanted(core: CoreProgram, named: Optional[str]) -> str:
    """The program the core wants, for messages: its path and build ID."""
    path = core.path or named or "a program it does not name"
    return f"{path} ({_id(core.build_id)})" if core.build_id else path
