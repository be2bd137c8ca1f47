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
    from ..commands import CommandError
    from ..commands.mixed_bt import py_mixed_bt
    from ..coreread import open_core
    argv = mixed_bt_command(options).split()[1:]  # the debuggers' command, same options
    try:
        process = open_core(core, executable, getattr(options, "sysroot", None) or "")
        _use_executable(process, named, os.path.abspath(executable))
    except (OSError, ValueError) as error:
        raise CliError(f"cannot read core file {core}: {error}") from None
    errors = ""
    try:
        output = py_mixed_bt(process, process.cache, argv) + "\n"
    except CommandError as error:
        output, errors = "", f"{error}\n"
    except Exception as error:  # the CLI's command entry: one line, never a traceback
        raise CliError(f"cannot read the stacks of {core}: {type(error).__name__}: {error}",
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
