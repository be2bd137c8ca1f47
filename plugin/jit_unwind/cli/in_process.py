"""``--debugger none``: ``py-mixed-bt --all-threads`` run in this process over the core
file itself (``jit_unwind.coreread``), for machines without GDB or LLDB; its text and
JSON are those the debuggers print."""

import os
import sys
from typing import Optional

from .debuggers import BatchResult, Debugger
from .errors import FAILED, CliError
from .stack import mixed_bt_command

NONE = Debugger("none", "jit-unwind's core reader (--debugger none)")


def _use_executable(process, named: Optional[str], executable: str) -> None:
    """Read ``executable`` where the core maps the program it names (a copy given on
    the command line, as a debugger is given one)."""
    if not named or named == executable:
        return
    for mapping in process.image.files:
        if mapping.path == named:
            mapping.path = executable


def run_core(core: str, executable: str, named: Optional[str], options) -> BatchResult:
    """What ``py-mixed-bt --all-threads`` with the user's options prints for ``core``,
    as a debugger's batch run would give it back."""
    from ..coreread import open_core
    try:
        process = open_core(core, executable, getattr(options, "sysroot", None) or "")
        _use_executable(process, named, os.path.abspath(executable))
    except (OSError, ValueError) as error:
        raise CliError(f"cannot read core file {core}: {error}") from None
    return _mixed_bt(process, options, core)


def run_minidump_here(image, executable: str, options) -> BatchResult:
    """What ``py-mixed-bt --all-threads`` prints for the minidump ``image`` read here
    (``jit_unwind.minidump``), ``executable`` read where it maps its program."""
    from ..minidump.process import open_image
    process = open_image(image)
    program = image.program()
    if program is not None:
        _use_executable(process, image.local_path(program.path), os.path.abspath(executable))
    return _mixed_bt(process, options, image.path)


LIVE = Debugger("none", "jit-unwind's live reader (--debugger none)")


def run_live(pid: int, options) -> BatchResult:
    """``py-mixed-bt --all-threads`` over live process ``pid``, read without a debugger:
    its threads stopped for the walk (``--nonblocking``: never all at once), then let go.
    How long the process stayed stopped is said on stderr with ``-v``."""
    from ..liveread import LiveReadError, read_process
    from ..liveread.threads import Ended
    nonblocking = getattr(options, "nonblocking", False)
    try:
        result, stopped_for = read_process(
            pid, lambda process: _mixed_bt(process, options, f"process {pid}"), nonblocking)
    except Ended as ended:  # the process was let go: end as the signal would have
        raise SystemExit(128 + ended.signum) from None
    except LiveReadError as error:
        raise CliError(str(error)) from None
    except CliError:
        from ..liveread.refusal import why_unreadable
        if why_unreadable(pid) is not None:  # what failed was reading a process gone
            raise CliError(f"process {pid} exited while it was read") from None
        raise
    notes = ""
    if nonblocking:
        notes += (f"jit-unwind: --nonblocking: process {pid} ran while it was read: the "
                  "stacks may be torn (each thread was stopped alone for its registers, "
                  f"{stopped_for * 1e3:.2f} ms at most)\n")
    elif getattr(options, "verbose", False):
        notes += f"jit-unwind: process {pid} was stopped for {stopped_for * 1e3:.1f} ms\n"
    return BatchResult(result.output, result.errors + notes, result.status,
                       result.whole + notes)


def _mixed_bt(process, options, what: str) -> BatchResult:
    """What ``py-mixed-bt --all-threads`` with the user's options prints for
    ``process`` (a core's or a live one's), as a debugger's batch run gives it back."""
    from ..commands import CommandError
    from ..commands.mixed_bt import py_mixed_bt
    argv = mixed_bt_command(options).split()[1:]  # the debuggers' command, same options
    errors = ""
    try:
        output = py_mixed_bt(process, process.cache, argv) + "\n"
    except CommandError as error:
        output, errors = "", f"{error}\n"
    except Exception as error:  # the CLI's command entry: one line, never a traceback
        raise CliError(f"cannot read the stacks of {what}: {type(error).__name__}: {error}",
                       FAILED) from None
    from ..coreread.sections import missing_pyelftools
    missing = missing_pyelftools()  # the quick readers' fallbacks (most files need none)
    if missing:
        process.warn(f"pyelftools is not installed in {sys.executable}: where "
                     f"{' and '.join(missing)} needed it, native frames are found by frame "
                     "pointers only and named by the symbol tables, without files and "
                     "lines (pip install pyelftools)")
    for warning in process.warnings:
        errors += warning if warning.startswith("jit-unwind: ") else f"jit-unwind: {warning}"
        errors += "\n"
    return BatchResult(output, errors, 0, output + errors)
