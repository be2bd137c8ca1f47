"""Copies of the separate debug files a core's libraries have, with their DWARF
sections decompressed once, for GDB to read instead.

Debian's debug files (``/usr/lib/debug/.build-id/…``, libc6-dbg's) keep their DWARF
compressed: to name one frame in libc, GDB inflates the file's whole ``.debug_info`` at
every run, ~35 ms of CPU of a ``jit-unwind core`` run through GDB (a third of its
loading of the core).  ``objcopy --decompress-debug-sections`` makes a copy with the
same DWARF, build ID and names, once, under ``$XDG_CACHE_HOME/jit-unwind/gdb-debug-files``
(the ``.build-id`` layout GDB looks up); GDB is then given that directory before its
own ``debug-file-directory``.  ``JIT_UNWIND_DEBUG_FILE_CACHE=0`` turns this off.
Never in the way: anything that fails here leaves GDB to read the files as it would.
"""

import os
import struct
from typing import List, Optional

from ..elf.disk_cache import cache_directory
from ..elf.debug_files import DEBUG_ROOT, by_build_id
from ..elf.notes import NT_FILE, PT_NOTE, file_entries, note_bodies, program_headers
from ..elf.rawelf import RawElf
from ..file_cache import FILE_ERRORS

ENV = "JIT_UNWIND_DEBUG_FILE_CACHE"
MAX_FILES = 32  # copies kept; the least recently made go first
SHF_COMPRESSED = 0x800


def cache_root() -> Optional[str]:
    """Where the copies are, None when ``JIT_UNWIND_DEBUG_FILE_CACHE`` turns them off."""
    return cache_directory(ENV, "gdb-debug-files")


def gdb_options(core: str, executable: str) -> List[str]:
    """GDB's ``-iex`` options that put the decompressed copies of the core's libraries'
    debug files first (made now where missing); [] when there are none or the cache is
    off."""
    root = cache_root()
    if root is None:
        return []
    try:
        root = _prepare(core, executable, root)
    except FILE_ERRORS:  # a cache is a bonus: GDB reads the originals
        return []
    if root is None or ":" in root:  # GDB's list of directories is colon-separated
        return []
    # Before GDB's own directories, and only for a GDB that reads the originals'
    # directory at all (the copies must add no debug info it would not read).
    command = ("python import gdb; d = gdb.parameter('debug-file-directory'); "
               f"gdb.execute('set debug-file-directory ' + {root!r} + ':' + d) "
               f"if {DEBUG_ROOT!r} in d.split(':') else None")
    return ["-iex", command]


def _prepare(core: str, executable: str, root: str) -> Optional[str]:
    import shutil
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        return None
    found = False
    for path in sorted(set(mapped_files(core)) | {executable}):
        source = _debug_file(path)
        if source is None:
            continue
        copy = os.path.join(root, ".build-id", *source.split(os.sep)[-2:])
        if _fresh(copy, source) or _decompress(objcopy, source, copy):
            found = True
    return root if found else None


def mapped_files(core: str) -> List[str]:
    """The files a core's NT_FILE note lists ([] without one), from its program headers
    and notes alone: the core reader's model and region modules are ~10 ms of imports
    for this run."""
    with open(core, "rb") as handle:
        try:
            headers = program_headers(handle)
        except ValueError:
            return []
        for kind, _flags, offset, _vaddr, _paddr, size, _memsz, _align in headers:
            if kind != PT_NOTE:
                continue
            handle.seek(offset)
            for note, body in note_bodies(handle.read(min(size, 1 << 24))):
                if note == NT_FILE:
                    return sorted({path for _start, _end, path, _offset in file_entries(body)
                                   if path})
    return []


def _debug_file(path: str) -> Optional[str]:
    """The separate debug file of ELF file ``path`` found by its build ID, when its DWARF
    is compressed; else None."""
    try:
        with open(path, "rb") as handle:
            debug = by_build_id(RawElf(handle, path))
    except (OSError, ValueError, struct.error):
        return None
    if debug is None:
        return None
    try:
        with open(debug, "rb") as handle:
            elf = RawElf(handle, debug)
    except (OSError, ValueError, struct.error):
        return None
    compressed = any(name.startswith(".zdebug") or (name.startswith(".debug")
                                                    and section["sh_flags"] & SHF_COMPRESSED)
                     for name, section in elf.sections.items())
    return debug if compressed else None


def _fresh(copy: str, source: str) -> bool:
    try:
        return os.stat(copy).st_mtime >= os.stat(source).st_mtime
    except OSError:
        return False


def _decompress(objcopy: str, source: str, copy: str) -> bool:
    """Write the decompressed copy (whole or not at all: another run may read it)."""
    import subprocess
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    temporary = f"{copy}.{os.getpid()}.tmp"
    try:
        done = subprocess.run([objcopy, "--decompress-debug-sections", source, temporary],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60)
        if done.returncode != 0:
            return False
        os.replace(temporary, copy)
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    _trim(os.path.dirname(os.path.dirname(copy)))
    return True


def _trim(build_ids: str) -> None:
    """At most MAX_FILES copies: the oldest go."""
    copies = [os.path.join(directory, name)
              for directory, _dirs, names in os.walk(build_ids) for name in names
              if name.endswith(".debug")]
    if len(copies) <= MAX_FILES:
        return
    copies.sort(key=lambda path: os.stat(path).st_mtime)
    for path in copies[:len(copies) - MAX_FILES]:
        try:
            os.unlink(path)
        except OSError:
            pass
