"""Compressed DWARF sections kept decompressed on disk between runs of ``jit-unwind core
--debugger none``: Debian's /usr/lib/debug files compress theirs, and inflating libc's
.debug_info alone (6 MB) is ~30 ms of every run, where reading it back is ~2 ms.

Where: ``$XDG_CACHE_HOME/jit-unwind/dwarf-sections`` (by default
``~/.cache/jit-unwind/dwarf-sections``), one file per section, named by the file's
identity (device, inode, size and modification time in ns) and the section's offset
and name: a file rebuilt or replaced gets other names, never the old bytes.  A cached
file shorter than its section holds the section's start (``--debugger none`` inflates
a section only as far as a backtrace needs, and keeps that much): parts within it are
read from it, others inflated again from the section's start; one longer is not used.
At most 64 files (``elf/disk_cache.DWARF_SECTIONS``), the least recently written
removed first.
``JIT_UNWIND_SECTION_CACHE=0`` turns it off; a cache directory that cannot be written
is the same as none."""

import os
from typing import Optional

from ..elf.disk_cache import DWARF_SECTIONS

MIN_SIZE = 256 * 1024  # smaller sections inflate in well under a millisecond


def cache_directory() -> Optional[str]:
    return DWARF_SECTIONS.directory()


def _entry(path: str, name: str, offset: int) -> Optional[str]:
    """The cache file of section ``name`` at ``offset`` of the file now at ``path``:
    named by the file's device, inode, size and modification time, the file itself
    wherever it is reached from (no hash: hashlib's import alone costs 4 ms)."""
    clean = "".join(c if c.isalnum() or c == "_" else "-" for c in name.lstrip("."))
    return DWARF_SECTIONS.entry(path, f"{offset:x}", clean)


def cached_copy(path: str, section) -> Optional[str]:
    """The cache file holding section ``section`` of ``path`` inflated, None when
    there is none of the right size (to read parts of it)."""
    directory = cache_directory() if section.data_size >= MIN_SIZE else None
    entry = _entry(path, section.name, section["sh_offset"]) \
        if directory else None
    try:
        return entry if entry is not None and \
            os.path.getsize(entry) == section.data_size else None
    except OSError:
        return None


def section_bytes(path: str, section) -> bytes:
    """The bytes of pyelftools section ``section`` of the file at ``path``, decompressed;
    from the cache when it has them, else decompressed and (large ones) written there."""
    size = section.data_size
    compressed = getattr(section, "compressed", False)
    directory = cache_directory() if compressed and size >= MIN_SIZE else None
    entry = _entry(path, section.name, section["sh_offset"]) \
        if directory else None
    if entry is not None:
        try:
            with open(entry, "rb") as handle:
                data = handle.read(size + 1)
            if len(data) == size:
                return data
        except OSError:
            pass
    data = section.data()
    if directory and entry is not None and len(data) == size:
        DWARF_SECTIONS.write(entry, data)
    return data


def kept_start(path: str, section) -> Optional[tuple]:
    """(open file, length) of the cache file holding the first bytes of ``section`` of
    ``path`` inflated, when there is one shorter than the section (a run that needed
    only its start); None otherwise."""
    directory = cache_directory() if section.data_size >= MIN_SIZE else None
    entry = _entry(path, section.name, section["sh_offset"]) \
        if directory else None
    if entry is None:
        return None
    try:
        handle = open(entry, "rb")
    except OSError:
        return None
    length = os.fstat(handle.fileno()).st_size
    if not 0 < length < section.data_size:
        handle.close()
        return None
    return handle, length


def keep_inflated(path: str, section, data, length: int) -> None:
    """The first ``length`` bytes of ``section`` of ``path`` (inflated this run, in
    ``data``) kept where the cache is on and holds fewer: the next run reads its parts
    within them from the copy (the whole section, when ``length`` is its size)."""
    directory = cache_directory() if section.data_size >= MIN_SIZE else None
    entry = _entry(path, section.name, section["sh_offset"]) \
        if directory else None
    if not directory or entry is None or not 0 < length <= section.data_size:
        return
    try:
        if os.path.getsize(entry) >= length:
            return
    except OSError:
        pass
    DWARF_SECTIONS.write(entry, bytes(data[:length]))
