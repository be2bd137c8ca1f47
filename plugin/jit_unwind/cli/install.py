"""``jit-unwind install [--gdb] [--lldb] [--uninstall]``: one line in ~/.gdbinit and
~/.lldbinit that loads this installed package, written once however often it runs."""

import os
from pathlib import Path
from typing import List

from .debuggers import GDB_LOADER, LLDB_LOADER
from .errors import CliError

# Each line names its loader by a path ending in one of these: that is how an earlier
# line is found again, from this installation or another one.
_LOADER_SUFFIX = {"gdb": "jit_unwind/loaders/gdb_init.py",
                  "lldb": "jit_unwind/loaders/lldb_init.py"}


def add_parser(subparsers, epilog: str) -> None:
    parser = subparsers.add_parser(
        "install", help="load the plugin in every gdb/lldb session (~/.gdbinit, ~/.lldbinit)",
        epilog=epilog,
        description="Add one line loading jit-unwind to ~/.gdbinit (--gdb) and/or "
                    "~/.lldbinit (--lldb); both without either option. Running it again "
                    "replaces the line; --uninstall removes it.")
    parser.add_argument("--gdb", action="store_true", help="~/.gdbinit")
    parser.add_argument("--lldb", action="store_true", help="~/.lldbinit")
    parser.add_argument("--uninstall", action="store_true", help="remove the line")
    parser.set_defaults(run=run)


def init_line(kind: str) -> str:
    if kind == "gdb":
        return f"source {GDB_LOADER}"
    return f"command script import {LLDB_LOADER}"


def init_file(kind: str) -> Path:
    home = os.environ.get("HOME") or str(Path.home())
    return Path(home) / (".gdbinit" if kind == "gdb" else ".lldbinit")


def is_ours(line: str, kind: str) -> bool:
    return line.rstrip().endswith(_LOADER_SUFFIX[kind])


def update(kind: str, uninstall: bool) -> str:
    """Write or remove the line; what was done, for the user."""
    path = init_file(kind)
    try:
        lines: List[str] = path.read_text().splitlines() if path.exists() else []
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read {path}: {error}") from None
    kept = [line for line in lines if not is_ours(line, kind)]
    if uninstall:
        if len(kept) == len(lines):
            return f"{path}: no jit-unwind line"
        done = f"{path}: jit-unwind line removed"
    else:
        kept.append(init_line(kind))
        done = f"{path}: {init_line(kind)}"
    try:
        path.write_text("".join(line + "\n" for line in kept))
    except OSError as error:
        raise CliError(f"cannot write {path}: {error}") from None
    return done


def run(options) -> int:
    kinds = [kind for kind in ("gdb", "lldb") if getattr(options, kind)] or ["gdb", "lldb"]
    for kind in kinds:
        print(update(kind, options.uninstall))
    if not options.uninstall:
        print("check that each debugger can load it: jit-unwind doctor")
    return 0
