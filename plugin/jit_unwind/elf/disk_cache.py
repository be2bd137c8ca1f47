"""Every cache the plugin keeps on disk, declared here: where each lives
(``$XDG_CACHE_HOME/jit-unwind/NAME``), the variable that turns it off, how its entries
are named (by a file's identity, the reader's, and what the entry holds), how many are
kept, and writing an entry whole or not at all.

- ``ELF_FACTS``: what is derived from a mapped ELF file (``elf/facts.py``);
- ``DWARF_FRAMES``: DWARF's answers per pc, for the reader of cores without a debugger
  (``coreread/frame_cache.py``);
- ``DWARF_SECTIONS``: compressed DWARF sections kept inflated
  (``coreread/section_cache.py``)."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import Dict, Optional, Sequence, Tuple

from ..file_cache import file_identity

OFF = ("0", "off", "no", "false")
_identities: Dict[Tuple[str, Tuple[str, ...]], str] = {}  # computed once a process
_directories: Dict[Tuple[str, Optional[str], Optional[str]], str] = {}


def cache_directory(env: str, name: str) -> Optional[str]:
    """``$XDG_CACHE_HOME/jit-unwind/NAME`` (``~/.cache`` by default), None when the
    variable ``env`` turns the cache off."""
    if os.environ.get(env, "").strip().lower() in OFF:
        return None
    key = (name, os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
    found = _directories.get(key)
    if found is None:  # asked per file and fact: expanduser is most of its cost
        base = key[1] or os.path.join(os.path.expanduser("~"), ".cache")
        found = _directories[key] = os.path.join(base, "jit-unwind", name)
    return found


def write_entry(directory: str, entry: str, data: bytes, suffix: str,
                max_files: int) -> None:
    """``data`` into ``entry`` (a file of ``directory``) through a temporary file, then at
    most ``max_files`` entries ending in ``suffix`` kept; errors leave nothing behind."""
    temporary = f"{entry}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        replaced = os.path.exists(entry)  # then the count of entries stays the same
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, entry)  # whole or not at all, for a run reading alongside
        if not replaced:
            _trim(directory, suffix, max_files)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass


def _trim(directory: str, suffix: str, max_files: int) -> None:
    """At most ``max_files`` entries: the least recently written go."""
    with os.scandir(directory) as entries:
        found = []
        for count, item in enumerate(entries):
            if count >= 10 * max_files:
                break
            if item.name.endswith(suffix):
                try:
                    found.append((item.stat().st_mtime_ns, item.path))
                except OSError:
                    pass
    for _mtime, path in sorted(found)[:-max_files]:
        try:
            os.unlink(path)
        except OSError:
            pass


def reader_identity(directory: str, modules) -> str:
    """A short name for the code that computes a cache's values: the sizes and
    modification times of ``modules`` (file names in ``directory``) and Python's
    version, so that a changed reader never reads what the one before kept."""
    key = (directory, tuple(modules))
    found = _identities.get(key)
    if found is None:
        import sys
        import zlib
        stamps: list[Optional[Tuple[int, int]]] = []
        for name in key[1]:
            try:
                stat = os.stat(os.path.join(directory, name))
                stamps.append((stat.st_size, stat.st_mtime_ns))
            except OSError:
                stamps.append(None)  # bytecode only: the version's own
        stamps.append(sys.version_info[:2])
        found = _identities[key] = f"{zlib.crc32(repr(stamps).encode()):08x}"
    return found


HERE = os.path.dirname(os.path.abspath(__file__))


class DiskCache:
    """One cache on disk: the directory ``name`` under the user's cache directory, off
    when the variable ``env`` says so; entries named by a file's identity (device,
    inode, size, modification time in ns), by the reader's identity when ``reader``
    lists the modules computing its values (paths from this folder: a change to one
    makes another reader), and by the parts an entry adds; at most ``max_files``
    entries ending in ``suffix``, the least recently written removed first."""

    def __init__(self, name: str, env: str, suffix: str, max_files: int,
                 reader: Sequence[str] = ()):
        self.name = name
        self.env = env
        self.suffix = suffix
        self.max_files = max_files
        self.reader = tuple(reader)

    def directory(self) -> Optional[str]:
        """Where the entries are, None when the cache is off."""
        return cache_directory(self.env, self.name)

    def entry(self, path: str, *parts: str) -> Optional[str]:
        """The entry for the file now at ``path`` and ``parts``; None when the cache is
        off or the file is gone."""
        directory = self.directory()
        identity = file_identity(path) if directory else None
        if directory is None or identity is None:
            return None
        device, inode, size, mtime = identity
        names = [f"{device:x}", f"{inode:x}", f"{size:x}", f"{mtime:x}"]
        if self.reader:
            names.append(reader_identity(HERE, self.reader))
        return os.path.join(directory, "-".join([*names, *parts]) + self.suffix)

    def write(self, entry: str, data: bytes) -> None:
        """``data`` into ``entry``, whole or not at all; errors leave nothing behind."""
        write_entry(os.path.dirname(entry), entry, data, self.suffix, self.max_files)


ELF_FACTS = DiskCache(
    "elf-facts", "JIT_UNWIND_ELF_CACHE", ".fact",
    1024,  # a JIT process maps 10-40 files, each with a summary (elf/lookup.py)
    reader=("../regions/nocfi.py", "lookup.py", "facts.py", "rawelf.py", "leb128.py",
            "debug_files.py", "notes.py", "eh_frame_hdr.py", "../regions/nocfi_pc.py"))
DWARF_FRAMES = DiskCache(
    "dwarf-frames", "JIT_UNWIND_FRAME_CACHE", ".frames", 64,
    reader=tuple(f"../coreread/{name}" for name in (
        "dies.py", "dwarf.py", "frame_cache.py", "headers.py", "lines.py", "ranges.py",
        "sections.py", "units.py")))
# No reader: an entry holds a section's bytes as the file has them, inflated.
DWARF_SECTIONS = DiskCache("dwarf-sections", "JIT_UNWIND_SECTION_CACHE", ".section", 64)
