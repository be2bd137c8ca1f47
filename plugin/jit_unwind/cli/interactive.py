"""``jit-unwind gdb|lldb [-- PROGRAM ARGS]``: the debugger, interactive, with the plugin
loaded."""

import os

from .debuggers import debugger_env, find_debugger, plugin_argv
from .errors import CliError


def add_parser(subparsers, epilog: str) -> None:
    for kind in ("gdb", "lldb"):
        parser = subparsers.add_parser(
            kind, help=f"start {kind} with the plugin loaded", epilog=epilog,
            description=f"Start {kind} with jit-unwind loaded, on PROGRAM ARGS if given.")
        parser.add_argument("program", metavar="-- PROGRAM ARGS", nargs="*")
        parser.add_argument("--debugger", default=kind, metavar="NAME|PATH",
                            help=f"which {kind} (default: {kind} on PATH"
                                 + ("; gdb18: this Python's gdb-for-pwndbg)" if kind == "gdb"
                                    else ")"))
        parser.set_defaults(run=run, kind=kind)


def run(options) -> int:
    debugger = find_debugger(options.debugger)
    argv = plugin_argv(debugger)
    env = debugger_env(debugger)
    program = list(options.program)
    if env.get("PATH") != os.environ.get("PATH"):
        # LLDB's own Python got a PATH without virtual environments (debugger_env): the
        # program is still the one the user's PATH finds, and runs with that PATH.
        import shutil
        if program:
            program[0] = shutil.which(program[0]) or program[0]
        path = os.environ.get("PATH", "").replace("\\", "\\\\").replace('"', '\\"')
        argv[1:1] = ["-O", f'settings set target.env-vars "PATH={path}"']
    if program:
        argv += ["--args" if debugger.kind == "gdb" else "--", *program]
    try:
        os.execve(argv[0], argv, env)
    except OSError as error:
        raise CliError(f"cannot run {argv[0]}: {error}") from None
    return 0  # not reached
