"""``jit-unwind attach PID``: every thread's mixed stack of a live process, read
through ptrace without changing it: by a debugger (which detaches at the end), or, with
``--debugger none``, here (``jit_unwind.liveread``: its threads stopped only for the
read)."""

import os

from ..liveread.refusal import PTRACE_SCOPE, SCOPES, ptrace_scope
from .debuggers import batch_argv, find_debugger, run_batch
from .errors import FAILED, CliError
from .stack import add_stack_options, mixed_bt_command, report

# What GDB and LLDB say when the kernel refuses to let them attach.
_REFUSED = ("ptrace: Operation not permitted", "Could not attach to process",
            "Operation not permitted", "attach failed")

__all__ = ["PTRACE_SCOPE", "ptrace_scope", "add_parser", "run"]


def add_parser(subparsers, epilog: str) -> None:
    parser = subparsers.add_parser(
        "attach", help="the mixed stack of every thread of a live process", epilog=epilog,
        description="Attach to process PID, print every thread's mixed native and Python "
                    "stack and detach; the process is only read. --debugger none reads it "
                    "here, with no debugger: the same stacks and JSON, every thread "
                    "stopped only while it is read.")
    parser.add_argument("pid", metavar="PID", type=int)
    add_stack_options(parser)
    parser.add_argument("--nonblocking", action="store_true",
                        help="with --debugger none: never stop the whole process (each "
                             "thread stops alone for its registers, microseconds); its "
                             "memory is read while it runs, so the stacks may be torn")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="with --debugger none: say how long the process was stopped")
    parser.set_defaults(run=run)


def why_refused(pid: int) -> str:
    """Why attaching to ``pid`` was refused, as far as this machine can tell."""
    reasons = []
    if SCOPES.get(ptrace_scope()):
        reasons.append(SCOPES[ptrace_scope()])
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
    if options.debugger == "none":
        from .in_process import LIVE, run_live
        return report(run_live(options.pid, options), options, LIVE,
                      f"process {options.pid}")
    if options.pid <= 0 or not os.path.isdir(f"/proc/{options.pid}"):
        raise CliError(f"no process {options.pid}")
    if options.nonblocking:
        raise CliError("--nonblocking is for --debugger none (a debugger stops the "
                       "process while it reads it)")
    debugger = find_debugger(options.debugger)
    argv = batch_argv(debugger, [mixed_bt_command(options)], pid=options.pid,
                      debug_info=not options.python_only)
    result = run_batch(argv, debugger)
    if any(text in result.whole for text in _REFUSED):
        raise CliError(f"not allowed to attach to process {options.pid}: "
                       f"{why_refused(options.pid)}", FAILED)
    return report(result, options, debugger, f"process {options.pid}")
