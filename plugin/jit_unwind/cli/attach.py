"""``jit-unwind attach PID``: every thread's mixed stack of a live process, read
through ptrace without changing it (the debugger detaches at the end)."""

import os

from .debuggers import batch_argv, find_debugger, run_batch
from .errors import FAILED, CliError
from .stack import add_stack_options, mixed_bt_command, report

PTRACE_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"
# What GDB and LLDB say when the kernel refuses to let them attach.
_REFUSED = ("ptrace: Operation not permitted", "Could not attach to process",
            "Operation not permitted", "attach failed")
_SCOPES = {
    "1": "only a parent may trace its children (Yama ptrace_scope 1): run as root, or "
         "sysctl kernel.yama.ptrace_scope=0",
    "2": "only root may attach (Yama ptrace_scope 2): run as root",
    "3": "attaching is disabled until reboot (Yama ptrace_scope 3)",
}


def add_parser(subparsers, epilog: str) -> None:
    parser = subparsers.add_parser(
        "attach", help="the mixed stack of every thread of a live process", epilog=epilog,
        description="Attach to process PID, print every thread's mixed native and Python "
                    "stack and detach; the process is only read.")
    parser.add_argument("pid", metavar="PID", type=int)
    add_stack_options(parser)
    parser.set_defaults(run=run)


def ptrace_scope() -> str:
    """Yama's ptrace_scope ("0" to "3"), "" when the kernel has no Yama."""
    try:
        with open(PTRACE_SCOPE) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def why_refused(pid: int) -> str:
    """Why attaching to ``pid`` was refused, as far as this machine can tell."""
    reasons = []
    if _SCOPES.get(ptrace_scope()):
        reasons.append(_SCOPES[ptrace_scope()])
    try:
        with open(f"/proc/{pid}/status") as handle:
            tracer = next((line.split()[1] for line in handle
                           if line.startswith("TracerPid:")), "0")
        if tracer != "0":
            reasons.append(f"process {tracer} is already tracing it")
    except OSError:
        pass
    if not reasons:
        reasons.append("another user's process, or a container without CAP_SYS_PTRACE "
                       "(docker run --cap-add=SYS_PTRACE)")
    return "; ".join(reasons)


def run(options) -> int:
    if options.pid <= 0 or not os.path.isdir(f"/proc/{options.pid}"):
        raise CliError(f"no process {options.pid}")
    if options.debugger == "none":
        raise CliError("attach needs a debugger to read a live process: --debugger none "
                       "reads core files only (jit-unwind core); use --debugger gdb or lldb")
    debugger = find_debugger(options.debugger)
    argv = batch_argv(debugger, [mixed_bt_command(options)], pid=options.pid,
                      debug_info=not options.python_only)
    result = run_batch(argv, debugger)
    if any(text in result.whole for text in _REFUSED):
        raise CliError(f"not allowed to attach to process {options.pid}: "
                       f"{why_refused(options.pid)}", FAILED)
    return report(result, options, debugger, f"process {options.pid}")
