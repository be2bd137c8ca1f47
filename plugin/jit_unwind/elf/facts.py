"""What the plugin derives from a mapped ELF file, kept on disk between sessions: its
code without CFI and the function symbols in it (regions/nocfi.py, per stretch
regions/nocfi_pc.py), a ``.symtab`` name's value (elf/lookup.symtab_value), the
headers and exported names the first ``bt`` asks of every file a program maps (one
entry per program, elf/lookup.py).  Node's builtins' symbols are ~10 ms of a first ``bt``
without a perf map; HotSpot's call stub variable, found in libjvm's 58,000 symbols,
~4 ms; parsing the 28 files HotSpot maps, ~1.5 ms.  Reading them back costs about a
millisecond.

Where: ``$XDG_CACHE_HOME/jit-unwind/elf-facts`` (by default
``~/.cache/jit-unwind/elf-facts``), one file per file and fact, named by the file's
identity (device, inode, size, modification time in ns) and by the reader's own (its
modules' sizes and modification times): a file rebuilt or replaced, or a changed
reader, never reads an old entry.  An entry also holds the identity of the other files
its value was computed from (the separate debug file, whose .debug_frame counts as
CFI): one installed, changed or removed since makes the value computed again.
``marshal``, written atomically when computed; at most 1,024 entries
(``elf/disk_cache.ELF_FACTS``).
``JIT_UNWIND_ELF_CACHE=0`` turns it off; a directory that cannot be written is the same
as none."""

from __future__ import annotations  # annotations unevaluated: less work at load

import marshal
from typing import Callable, List, Optional, TypeVar

from ..file_cache import file_identity
from .disk_cache import ELF_FACTS

Value = TypeVar("Value")


def cache_directory() -> Optional[str]:
    return ELF_FACTS.directory()


def no_other_files(_path: str) -> List[str]:
    return []


def _entry(path: str, fact: str) -> Optional[str]:
    """The cache file of ``fact`` for the file now at ``path``; None without a cache."""
    return ELF_FACTS.entry(path, fact)


def kept(path: str, fact: str, compute: Callable[[str], Value],
         valid: Callable[[object], bool],
         depends: Callable[[str], List[str]] = no_other_files) -> Value:
    """``compute(path)``, read from the cache when an entry of ``fact`` (a short name:
    letters, digits, dashes) for the file now at ``path`` is there, its ``depends(path)``
    files unchanged and ``valid(value)``; else computed and written there.  Exceptions
    of ``compute`` are the caller's."""
    entry = _entry(path, fact)
    if entry is None:
        return compute(path)
    others = [(other, file_identity(other)) for other in depends(path)]
    try:
        with open(entry, "rb") as handle:
            kept_others, value = marshal.loads(handle.read())  # load(handle): 3x slower
        if kept_others == others and valid(value):
            return value
    except (OSError, EOFError, ValueError, TypeError):
        pass  # none yet, or cut short or garbage: computed and written again
    value = compute(path)
    _write(entry, others, value)
    return value


def keep(path: str, fact: str, value) -> None:
    """Write ``value`` as ``fact``'s entry for the file now at ``path``: a value that
    grew since :func:`kept` read it, of a fact computed from that file alone."""
    entry = _entry(path, fact)
    if entry is not None:
        _write(entry, [], value)


def _write(entry: str, others, value) -> None:
    try:
        data = marshal.dumps((others, value))
    except ValueError:  # a value marshal cannot hold: nothing kept
        return
    ELF_FACTS.write(entry, data)
