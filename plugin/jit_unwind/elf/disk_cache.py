"""What the core reader's on-disk caches share (``section_cache``: inflated DWARF
sections; ``frame_cache``: DWARF's answers per pc): where they live, the variable that
turns one off, and writing an entry whole or not at all, keeping a bounded number."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import Dict, Optional, Tuple

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
