"""The user's commands, written once for every debugger: each is a function of
(process, per-stop cache, arguments) returning the text to print.  A command that cannot
run raises :class:`CommandError` with the message the adapter shows as its error."""

import argparse

from ..target import JitUnwindError


class CommandError(JitUnwindError):
    """The command cannot run; the message is for the user."""


class Parser(argparse.ArgumentParser):
    """argparse that raises CommandError instead of exiting."""

    def error(self, message):
        raise CommandError(f"{self.prog}: {message}. Try \"help {self.prog}\".")
