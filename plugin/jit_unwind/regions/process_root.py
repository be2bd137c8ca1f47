"""Where a process's own files are read from here, and which pid it knows itself by.

A process in a container sees another root: the files it maps, its perf map and its
jitdump are read through /proc/PID/root.  In its own pid namespace it has another pid,
and that pid names its /tmp/perf-PID.map and jit-PID.dump.  A core read with a sysroot
(``set sysroot``, ``--sysroot``) that is a whole root (a container's) has all its files
under that directory: the core's pid is the one the process knew itself by."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import Optional, Tuple


def other_root(pid: int) -> str:
    """"/proc/PID/root" when the live process ``pid`` sees other files than this
    reader at the same paths: another mount namespace (a container, ``unshare
    --mount``), another root directory (a chroot); "" when the same (or it cannot
    tell)."""
    try:
        if os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"):
            return f"/proc/{pid}/root"
        theirs, ours = os.stat(f"/proc/{pid}/root"), os.stat("/")
    except OSError:
        return ""
    if (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino):
        return ""
    return f"/proc/{pid}/root"


def pid_inside(pid: int, directory: str = "") -> int:
    """The pid the live process ``pid`` knows itself by: the last of its NSpid (its
    innermost pid namespace's), else ``pid``.  ``directory``: its /proc directory, for
    a thread (/proc/PID/task/TID)."""
    try:
        with open(f"{directory or f'/proc/{pid}'}/status", encoding="ascii",
                  errors="replace") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return pid


# Names of memory no file on disk backs, kept as they are (Mapping.anonymous).
NOT_FILES = ("/memfd:", "/dev/zero (deleted)", "/SYSV")


def host_path(root: str, path: str) -> str:
    """``path`` as the process names it, where it is read from here."""
    if (not root or not path.startswith("/") or path.startswith(NOT_FILES)
            or path.startswith(root.rstrip("/") + "/")):
        return path
    return root.rstrip("/") + path


def process_root(process, kind: str) -> Tuple[str, Optional[int]]:
    """(the directory the process's own paths are under here, "" for this machine's
    root; the pid it knows itself by) of a debugger.Process connected as ``kind``."""
    pid = process.pid()
    if pid is None:
        return "", None
    if kind == "native":
        return other_root(pid), pid_inside(pid)
    if kind == "core":
        # A whole root (a container's: it has /tmp) holds the process's perf map and
        # jitdump too; a root of libraries alone (qemu-user's -L) does not: the
        # process wrote them in this machine's /tmp.
        sysroot = process.sysroot() or ""
        return (sysroot if sysroot and os.path.isdir(os.path.join(sysroot, "tmp")) else ""), pid
    return "", pid
