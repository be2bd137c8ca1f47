"""The ``jit-unwind`` command: drives GDB or LLDB as subprocesses with the plugin
loaded (this package never imports a debugger).  One module per subcommand, each with
``add_parser(subparsers)`` and ``run(options) -> exit status``."""

import argparse
import os
import sys
from typing import List, Optional

from .errors import USAGE, CliError

EPILOG = """exit status:
  0  success
  1  the debugger failed, or found no Python in the process
  2  usage error: bad arguments, a core, executable or process that cannot be found,
     a core cut short before its notes, an executable that is not the core's program
     (core --force reads it anyway), a compressed core cut short or whose
     decompressor is not installed
  141  the reader of the output stopped early (`| head`), quietly"""


class _Formatter(argparse.HelpFormatter):
    """Paragraphs wrapped, but a text laid out in lines (the exit statuses) kept so.
    The terminal's width found as shutil.get_terminal_size finds it, without importing
    shutil (and bz2, lzma, fnmatch with it): argparse makes a formatter for every
    option added, and every run of the command pays for that import."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's, else 80."""
    import os
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            stdout = sys.__stdout__  # None in a Python started without one
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """Subcommands' parsers with our formatter from the start (their options are
    added before the caller could set it)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


COMMANDS = ("core", "attach", "install", "doctor", "gdb", "lldb")


def _modules(argv: Optional[List[str]]) -> list:
    """The subcommands' modules: only the one named when the command line starts with
    it (its parser is all argparse will use; the others' imports cost ~10 ms)."""
    import importlib
    first = argv[0] if argv else ""
    names = ["core", "attach", "install", "doctor", "interactive"]
    if first in COMMANDS:
        names = ["interactive" if first in ("gdb", "lldb") else first]
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def _parser(argv: Optional[List[str]] = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jit-unwind", epilog=EPILOG, formatter_class=_Formatter,
        description="Mixed Python and native stacks through JIT code, from a core file or "
                    "a live process, with GDB or LLDB.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                       parser_class=_Parser)
    for module in _modules(argv):
        module.add_parser(subparsers, EPILOG)
    for subparser in subparsers.choices.values():
        subparser.formatter_class = _Formatter
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``jit-unwind ARGV``; errors are one line on stderr and an exit status."""
    try:
        if argv is None:
            argv = sys.argv[1:]
        options = _parser(argv).parse_args(argv)
        return options.run(options)
    except CliError as error:
        print(f"jit-unwind: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `jit-unwind ... | head`: the reader has what it wanted
        _drop_stdout()
        return 128 + 13  # what a program killed by SIGPIPE reports
    except OSError as error:  # a file or program that went away under us
        print(f"jit-unwind: {error}", file=sys.stderr)
        return USAGE


def _drop_stdout() -> None:
    """Point stdout at /dev/null so Python's flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


__all__ = ["main", "CliError"]
