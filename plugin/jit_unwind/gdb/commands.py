"""The core's commands (``jit_unwind.commands.registry``) registered with GDB."""

import gdb

from ..commands import CommandError
from ..commands.registry import STACK, Context, Registered, for_debugger
from .state import STATE
from . import symfile

_CLASSES = {STACK: gdb.COMMAND_STACK}


class _Command(gdb.Command):
    """One declared command: the argument as the core wants it, the text printed,
    CommandError (and anything else: never a Python traceback) as GDB's error."""

    def __init__(self, item: Registered):
        self.item = item
        self.__doc__ = item.help
        super().__init__(item.name, _CLASSES.get(item.command.category, gdb.COMMAND_STATUS),
                         gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        try:
            text = self.item.command.run(_context(), gdb.string_to_argv(argument)
                                         if self.item.command.split else argument)
        except CommandError as error:
            raise gdb.GdbError(str(error)) from None
        except gdb.GdbError:
            raise
        except Exception as error:  # GDB calls in (a command): never a traceback
            raise gdb.GdbError(f"{self.item.name}: {error}") from None
        gdb.write(text + "\n")


def _context() -> Context:
    symfile.refresh()  # a safe point: a core loaded by "core-file" has had no stop yet
    loaded = symfile.FILES.loaded
    return Context(STATE.process, STATE, (loaded, symfile.FILES.covers) if loaded else None,
                   evaluate=_evaluate)


def _evaluate(expression: str) -> int:
    """GDB's value of an address expression ("$pc", "main", "0x7f..."): a function's
    is its address."""
    try:
        value = gdb.parse_and_eval(expression)
        if value.type.strip_typedefs().code == gdb.TYPE_CODE_FUNC:
            value = value.address
        return int(value) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, TypeError, ValueError) as error:
        raise CommandError(f"{expression}: {error}") from None


def register_commands() -> None:
    for item in for_debugger("gdb"):
        _Command(item)
