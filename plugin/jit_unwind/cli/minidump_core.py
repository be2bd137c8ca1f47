"""``jit-unwind core FILE.dmp``: a Linux minidump (Breakpad's, Crashpad's, LLDB's
``process save-core --plugin-name=minidump``), told by its 'MDMP' magic, read with no
debugger (``--debugger none``; also for GDB, which reads no minidump) or through LLDB,
which reads minidumps itself."""

import os
import sys

from .debuggers import batch_argv, find_debugger, run_batch
from .errors import CliError
from .stack import mixed_bt_command, report


def is_minidump(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == b"MDMP"


def _program(image, shown: str):
    """The program module the minidump names, checked to be on this machine."""
    module = image.program()
    if module is None or not module.path.startswith("/"):
        raise CliError(f"{shown} does not name its executable: give it, "
                       "jit-unwind core CORE EXECUTABLE")
    path = image.local_path(module.path)
    if not os.path.isfile(path):
        built = f" (build ID {module.build_id})" if module.build_id else ""
        raise CliError(f"{shown} was made of {module.path}{built}, which is not on this "
                       "machine: give a copy, jit-unwind core CORE EXECUTABLE")
    return module, path


def _check(module, executable: str, options) -> str:
    """CliError when ``executable`` is no program, or another build than the one the
    minidump lists (``--force``: the warning to print instead); "" when it is."""
    from .core_check import read_executable
    given = read_executable(executable, module.path if module else None)
    if module is None or not module.build_id or not given.build_id \
            or given.build_id == module.build_id:
        return ""
    text = (f"{executable} is not the program {options.core} was made of, {module.path} "
            f"(build ID {module.build_id}): its build ID is {given.build_id}")
    if not options.force:
        raise CliError(f"{text}; give that file, or --force to read it with "
                       f"{executable} anyway")
    return f"jit-unwind: warning: {text}; read anyway (--force): the stacks may be wrong"


def run_minidump(options, dump: str) -> int:
    """``dump``: the plain minidump (``options.core`` decompressed, when it was)."""
    from ..minidump import MinidumpImage
    try:
        image = MinidumpImage(dump, options.sysroot or "")
    except (OSError, ValueError) as error:
        raise CliError(f"cannot read minidump {options.core}: {error}") from None
    has, needs = image.size
    if has < needs:
        print(f"jit-unwind: warning: the minidump {options.core} is truncated: it has "
              f"{has} bytes of the {needs} (at least) its streams and memory need; what "
              "lies past its end is unreadable", file=sys.stderr)
    if options.executable:
        module, executable = image.program(), options.executable
    else:
        module, executable = _program(image, options.core)
    warning = _check(module, executable, options)
    if not options.executable:
        print(f"jit-unwind: executable {executable} (named by the minidump)", file=sys.stderr)
    debugger = None if options.debugger == "none" else find_debugger(options.debugger)
    if debugger is not None and debugger.kind == "gdb":
        print("jit-unwind: GDB does not read minidumps: read without a debugger "
              "(--debugger none; --debugger lldb reads them too)", file=sys.stderr)
        debugger = None
    if debugger is None:
        from .in_process import NONE, run_minidump_here
        status = report(run_minidump_here(image, executable, options), options, NONE,
                        options.core)
    else:
        argv = batch_argv(debugger, [mixed_bt_command(options)], core=dump,
                          executable=executable, debug_info=not options.python_only,
                          sysroot=options.sysroot or "")
        status = report(run_batch(argv, debugger), options, debugger, options.core)
    if warning:
        print(warning, file=sys.stderr)
    return status
