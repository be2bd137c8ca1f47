"""``jit-unwind core CORE [EXECUTABLE]``: every thread's mixed stack in a core file,
through a debugger or (``--debugger none``) read here without one."""

import os
import struct
import sys

from .debuggers import batch_argv, find_debugger, run_batch
from .compressed import plain_core
from .errors import CliError
from .stack import add_stack_options, mixed_bt_command, report


def add_parser(subparsers, epilog: str) -> None:
    parser = subparsers.add_parser(
        "core", help="the mixed stack of every thread in a core file", epilog=epilog,
        description="Print every thread's mixed native and Python stack from a core file. "
                    "Without EXECUTABLE, the program the core names is used (said on "
                    "stderr). --debugger none reads the core without any debugger (no GDB "
                    "or LLDB needed): the same stacks and JSON as GDB's.")
    parser.add_argument("core", metavar="CORE",
                        help="a core file or a Linux minidump (Breakpad's, Crashpad's, "
                             "LLDB's), also compressed as systemd-coredump stores it "
                             "(zstd, xz, lz4, gzip)")
    parser.add_argument("executable", metavar="EXECUTABLE", nargs="?")
    parser.add_argument("--sysroot", metavar="DIR",
                        help="where the files the core's program loaded are (GDB's "
                             "'set sysroot'; also for --debugger none), e.g. an aarch64 "
                             "root for a core from qemu-aarch64")
    parser.add_argument("--force", action="store_true",
                        help="read the core with EXECUTABLE even when it is not the "
                             "program the core was made of (its build ID or layout "
                             "differs); the stacks may then be wrong, and it says so")
    add_stack_options(parser)
    parser.set_defaults(run=run)


def _readable(path: str, what: str) -> None:
    if os.path.isdir(path):
        article = "an" if what[0] in "aeiou" else "a"
        raise CliError(f"{path} is a directory, not {article} {what}")
    if not os.path.isfile(path):
        raise CliError(f"{what} {path} not found")
    if not os.access(path, os.R_OK):
        raise CliError(f"{what} {path} cannot be read (permission denied)")


DELETED = " (deleted)"  # how NT_FILE names a file removed or replaced since it was mapped


def find_executable(core: str, shown: str = "") -> str:
    """The executable the core names, checked to exist here; ``shown``: the core's name
    in messages (the compressed file the user gave)."""
    from ..regions.corefile import core_executable
    shown = shown or core
    try:
        named = core_executable(core)
    except ValueError as error:
        raise CliError(f"{shown} is not an x86-64 or aarch64 core file: {error}") from None
    if not named:
        raise CliError(f"{shown} does not name its executable: give it, "
                       "jit-unwind core CORE EXECUTABLE")
    if named.endswith(DELETED) and os.path.isfile(named[:-len(DELETED)]):
        # Replaced while it ran (an upgrade): the file there now, if it is the same build
        # (check_executable says).
        return named[:-len(DELETED)]
    if not os.path.isfile(named):
        from .core_check import CoreProgram, wanted
        try:
            named = wanted(CoreProgram(core), named)
        except (OSError, ValueError):  # the path alone then
            pass
        raise CliError(f"{shown} was made of {named}, which is not on this machine: "
                       "give a copy, jit-unwind core CORE EXECUTABLE")
    return named


def _named(core: str):
    """The executable the core names, None when it names none."""
    from ..regions.corefile import core_executable
    try:
        return core_executable(core)
    except (OSError, ValueError):
        return None


def run(options) -> int:
    _readable(options.core, "core file")
    if options.executable:
        _readable(options.executable, "executable")
    with plain_core(options.core) as core:
        return _run(options, core)


EM_X86_64, EM_AARCH64 = 62, 183


def core_machine(core: str) -> int:
    """The ELF ``e_machine`` of ``core`` (0 when it is not ELF)."""
    with open(core, "rb") as handle:
        header = handle.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return 0
    return struct.unpack("<H", header[18:20])[0]


def _aarch64_debugger(options):
    """The debugger for an aarch64 core: one built for aarch64 (gdb-multiarch; the
    pip GDB 18 reads every architecture) unless --debugger names one; CliError when
    there is none."""
    import shutil  # here: --debugger none, and most cores, need none of its imports
    from .debuggers import Debugger, beside_python
    if options.debugger != "gdb":
        return find_debugger(options.debugger)
    found = shutil.which("gdb-multiarch") or beside_python("gdb")
    if not found:
        raise CliError("an aarch64 core needs a GDB that reads aarch64: install "
                       "gdb-multiarch (apt-get install gdb-multiarch)")
    return Debugger("gdb", found)


def _run(options, core: str) -> int:
    """``core``: the plain core to read (``options.core`` decompressed, when it was)."""
    from .minidump_core import is_minidump, run_minidump
    if is_minidump(core):
        return run_minidump(options, core)
    machine = core_machine(core)
    if machine not in (EM_X86_64, EM_AARCH64):
        raise CliError(f"{options.core} is not an x86-64 or aarch64 core file")
    from .core_check import check_notes
    check_notes(core, options.core)
    if options.executable:
        executable = options.executable
    else:
        executable = find_executable(core, options.core)
    warning = check_executable(core, executable, options)
    check_libraries(core, options)
    if not options.executable:
        print(f"jit-unwind: executable {executable} (named by the core)", file=sys.stderr)
    status = _read(options, core, executable, machine)
    if warning:
        print(warning, file=sys.stderr)
    return status


def check_libraries(core: str, options) -> None:
    """Warn (stderr) when files the core maps are other builds here than in the core:
    the core of a process in a container read without its root (--sysroot)."""
    from .core_check import CoreProgram, other_builds
    try:
        found = other_builds(CoreProgram(core), options.sysroot or "")
    except (OSError, ValueError, struct.error):
        return
    if not found:
        return
    listed = ", ".join(f"{path} (build ID {here[:12]}… here, {recorded[:12]}… in the core)"
                       for path, recorded, here in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    how = "the sysroot holds other builds" if options.sysroot else (
        "give the root the process ran in (a container's) with --sysroot")
    print(f"jit-unwind: warning: the core's files are other builds here: {listed}{more}; "
          f"frames in them may be misnamed or cut short: {how}", file=sys.stderr)


def check_executable(core: str, executable: str, options) -> str:
    """CliError when ``executable`` is no program, or not the one the core was made of
    (with ``--force``: the warning to print under the stacks instead); "" when it is."""
    from .core_check import CoreProgram, mismatch, read_executable, wanted
    try:
        program = CoreProgram(core)
    except (OSError, ValueError):  # the readers say what is wrong with the core
        program = None
    named = (program.path if program else None) or _named(core)
    given = read_executable(executable, named)
    why = mismatch(program, given) if program else None
    if why is None:
        return ""
    assert program is not None
    if options.executable:
        text = (f"{executable} is not the program {options.core} was made of, "
                f"{wanted(program, named)}: {why}")
        fix = f"give that file, or --force to read the core with {executable} anyway"
    else:
        text = (f"{options.core} was made of {wanted(program, named)}, but the file there "
                f"now is another: {why}")
        fix = ("give a copy of the one it was made of (jit-unwind core CORE EXECUTABLE), "
               "or --force to read the core with this one anyway")
    if not options.force:
        raise CliError(f"{text}; {fix}")
    return f"jit-unwind: warning: {text}; read anyway (--force): the stacks may be wrong"


def _read(options, core: str, executable: str, machine: int) -> int:
    if options.debugger == "none":
        from .in_process import NONE, run_core
        named = _named(core) or executable  # the path the core maps it under
        return report(run_core(core, executable, named, options), options, NONE,
                      options.core)
    if machine == EM_AARCH64:
        debugger = _aarch64_debugger(options)
    else:
        debugger = find_debugger(options.debugger)
    argv = batch_argv(debugger, [mixed_bt_command(options)], core=core,
                      executable=executable, debug_info=not options.python_only,
                      sysroot=options.sysroot or "")
    return report(run_batch(argv, debugger), options, debugger, options.core)
