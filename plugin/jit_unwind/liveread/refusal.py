"""Why a live process cannot be read, in one line with the fix: told before trying
(no such process, a zombie, a kernel thread, a process a debugger already traces) or
after the kernel refused to let us trace it (Yama's ptrace_scope, another user's
process, no CAP_SYS_PTRACE)."""

import os
from typing import Dict, Optional, Union

PTRACE_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"
CAP_SYS_PTRACE = 19
PF_KTHREAD = 0x00200000  # /proc/PID/stat's flags (field 9): a kernel thread
SCOPES = {
    "1": "Yama ptrace_scope is 1: only a parent may trace its children, or a tracer "
         "with CAP_SYS_PTRACE; run as root (sudo), or allow it with "
         "sysctl kernel.yama.ptrace_scope=0",
    "2": "Yama ptrace_scope is 2: only a tracer with CAP_SYS_PTRACE may attach; run as "
         "root (sudo)",
    "3": "Yama ptrace_scope is 3: attaching is disabled until the next reboot (no fix "
         "without one)",
}


def ptrace_scope() -> str:
    """Yama's ptrace_scope ("0" to "3"), "" when the kernel has no Yama."""
    try:
        with open(PTRACE_SCOPE) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def status_fields(pid: Union[int, str]) -> Dict[str, str]:
    """/proc/PID/status as name -> value; {} when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return {name: value.strip() for name, _, value in
                    (line.partition(":") for line in handle)}
    except OSError:
        return {}


def has_ptrace_capability(pid: str = "self") -> Optional[bool]:
    """Whether ``pid`` (this process by default) holds CAP_SYS_PTRACE; None unknown."""
    try:
        return bool(int(status_fields(pid)["CapEff"], 16) >> CAP_SYS_PTRACE & 1)
    except (KeyError, ValueError):
        return None


def _stat(pid: int):
    """(command name, state, flags) from /proc/PID/stat, None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    name = text[text.find("(") + 1:text.rfind(")")]
    fields = text[text.rfind(")") + 2:].split()
    try:
        return name, fields[0], int(fields[6])
    except (IndexError, ValueError):
        return None


def _name(pid: int) -> str:
    stat = _stat(pid)
    return f"{pid} ({stat[0]})" if stat else str(pid)


def why_unreadable(pid: int) -> Optional[str]:
    """Why process ``pid`` cannot be read whatever our rights, None when it may be."""
    if pid <= 0 or not os.path.isdir(f"/proc/{pid}"):
        return f"no process {pid}"
    stat = _stat(pid)
    status = status_fields(pid)
    if stat is None or not status:
        return f"no process {pid}"
    name, state, flags = stat
    if flags & PF_KTHREAD:
        return (f"process {pid} ({name}) is a kernel thread: it has no user-space stack "
                "to read")
    if state in ("Z", "X"):
        parent = status.get("PPid", "?")
        return (f"process {pid} ({name}) is a zombie: it has exited, and its parent "
                f"{_name(int(parent)) if parent.isdigit() else parent} has not reaped it "
                "yet: nothing is left to read")
    if status.get("Tgid", str(pid)) != str(pid):
        return (f"{pid} is a thread of process {status['Tgid']}: jit-unwind attach "
                f"{status['Tgid']} reads all of its threads")
    tracer = status.get("TracerPid", "0")
    if tracer not in ("0", str(os.getpid())):
        return (f"process {pid} ({name}) is already traced by process "
                f"{_name(int(tracer))}: detach that debugger first (a process has one "
                "tracer at a time)")
    return None


def why_refused(pid: int) -> str:
    """Why the kernel refused to let us trace ``pid`` (EPERM), with the fix."""
    early = why_unreadable(pid)
    if early is not None:
        return early
    capable = has_ptrace_capability()
    scope = ptrace_scope()
    if scope == "3" or (scope in SCOPES and not capable):
        return SCOPES[scope]
    if not capable and os.geteuid() == 0:
        return ("this root has no CAP_SYS_PTRACE (a container?): run the container with "
                "--cap-add=SYS_PTRACE, or outside it")
    theirs = status_fields(pid).get("Uid", "").split()
    if theirs and any(uid != str(os.getuid()) for uid in theirs[:3]) and not capable:
        return (f"process {_name(pid)} belongs to another user (uid {theirs[0]}): run as "
                "that user, or as root (sudo)")
    if not capable:
        return (f"process {_name(pid)} holds capabilities this user lacks, or is not "
                "dumpable (a setuid program, prctl(PR_SET_DUMPABLE, 0)): run as root "
                "(sudo)")
    return "the kernel refused (a security module's policy?)"
