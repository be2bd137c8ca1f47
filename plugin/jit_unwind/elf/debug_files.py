"""Where a file's separate debug file is, as GDB looks for it: by build ID
(``/usr/lib/debug/.build-id/xx/yyy.debug``), then by the name its ``.gnu_debuglink``
gives (beside the file, in ``.debug/`` there, under ``/usr/lib/debug``).  Only the
file's headers, build ID note and debug link are read: no symbol table."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
import struct
from typing import List, Optional

from .notes import gnu_build_id
from .rawelf import RawElf

DEBUG_ROOT = "/usr/lib/debug"


def build_id(elf: RawElf) -> Optional[str]:
    """The build ID of ``elf`` in hex; None without a well-formed one."""
    note = elf.sections.get(".note.gnu.build-id")
    return gnu_build_id(note.data()) if note is not None else None


def debug_link(elf: RawElf) -> Optional[str]:
    """The file name ``elf``'s ``.gnu_debuglink`` gives; None without one."""
    link = elf.sections.get(".gnu_debuglink")
    if link is None:
        return None
    return link.data().split(b"\0")[0].decode("utf-8", "replace")


def build_id_file(identity: Optional[str], root: Optional[str] = None) -> Optional[str]:
    """Where the debug file of build ID ``identity`` would be under ``root``, there or
    not; None for none (or one too short to split into directory and name)."""
    if not identity or len(identity) < 4:
        return None
    return os.path.join(root or DEBUG_ROOT, ".build-id", identity[:2], identity[2:] + ".debug")


# The debug directories of the sysroots a core is read with (GDB looks under its sysroot
# too): a container's root has its own debug packages.  Searched by build ID only.
_sysroot_debug_roots: List[str] = []


def look_under(sysroot: str) -> None:
    """Debug files are also looked for, by build ID, under ``sysroot``'s /usr/lib/debug."""
    root = sysroot.rstrip("/") + DEBUG_ROOT if sysroot else ""
    if root and root not in _sysroot_debug_roots:
        _sysroot_debug_roots.append(root)


def _by_id(identity: Optional[str]) -> List[str]:
    """Where GDB looks for the debug file of build ID ``identity``: this machine's
    debug directory, then the sysroots'."""
    found = [build_id_file(identity, root) for root in (DEBUG_ROOT, *_sysroot_debug_roots)]
    return [path for path in found if path is not None]


def by_build_id(elf: RawElf) -> Optional[str]:
    """Where ``elf``'s debug file found by build ID would be, there or not."""
    return build_id_file(build_id(elf))


def candidates(path: str, identity: Optional[str], link: Optional[str]) -> List[str]:
    """Where GDB looks for the debug file of ``path`` (build ID ``identity``, debug
    link ``link``), in its order."""
    found = _by_id(identity)
    if link:
        directory = os.path.dirname(os.path.realpath(path))
        found += [os.path.join(directory, link), os.path.join(directory, ".debug", link),
                  DEBUG_ROOT + os.path.join(directory, link)]
    return found


def separate_debug_file(path: str, identity: Optional[str],
                        link: Optional[str]) -> Optional[str]:
    """The first of the ``candidates`` that is a file (``path`` itself is not) of the
    same build: one found by its debug link's name alone may be another build's (a
    container's libc named as this machine's), whose names would be wrong."""
    by_id = _by_id(identity)
    return next((candidate for candidate in candidates(path, identity, link)
                 if candidate != path and os.path.isfile(candidate)
                 and (candidate in by_id or _same_build(candidate, identity))), None)


def _same_build(candidate: str, identity: Optional[str]) -> bool:
    """Whether the debug file ``candidate`` has build ID ``identity`` (a file without
    one, as GDB would take it by its debug link's CRC: taken)."""
    if identity is None:
        return True
    try:
        with open(candidate, "rb") as handle:
            return build_id(RawElf(handle, candidate)) == identity
    except (OSError, ValueError, struct.error):
        return False
