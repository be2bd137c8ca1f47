"""The user's commands, written once for every debugger: each module declares one in
the table of :mod:`.registry` (names, help, a function of (process, per-stop cache,
arguments) returning the text to print), which every adapter registers.  A command that
cannot run raises :class:`CommandError` with the message the adapter shows as its
error."""

from ..target import JitUnwindError


class CommandError(JitUnwindError):
    """The command cannot run; the message is for the user."""


_PARSER_CLASS: list = []


def __getattr__(name: str):
    """``Parser``: argparse that raises CommandError instead of exiting.  Made on first
    use: argparse costs the debugger's start-up ~2 ms, and only a command that parses
    options needs it."""
    if name != "Parser":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _PARSER_CLASS:
        import argparse

        class Parser(argparse.ArgumentParser):
            def error(self, message):
                raise CommandError(f"{self.prog}: {message}. Try \"help {self.prog}\".")

        _PARSER_CLASS.append(Parser)
    return _PARSER_CLASS[0]
