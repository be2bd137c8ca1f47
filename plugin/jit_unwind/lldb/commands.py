"""The core's commands (``jit_unwind.commands.registry``: ``jit-regions``,
``py-mixed-bt``, ``jit-unwind`` for the settings) registered with LLDB's ``command script
add -c``, one class each, made from the table."""

import shlex

import lldb

from ..commands import CommandError
from ..commands.lldb_text import class_name, lldb_help, long_help, short_help
from ..commands.registry import Context, Registered, for_debugger
from .capabilities import providers_supported
from .registration import ensure_provider, refresh_providers
from .settings import changed
from .state import cache_for


def _context(item: Registered, debugger, exe_ctx) -> Context:
    """The process's StopCache (and the symbol file, loaded if due: a safe point, and a
    core file never stops) when the command needs them."""
    context = Context(setting_changed=lambda name: _setting_changed(name, debugger))
    if not item.command.needs_process:
        return context
    process = exe_ctx.GetProcess()
    if not process.IsValid():
        raise CommandError("No process: launch a program or load a core file first.")
    ensure_provider(exe_ctx.GetTarget())
    context.cache = cache_for(process)
    context.process = context.cache.process
    from . import symfile
    target = context.process.target
    symfile.refresh(target)
    context.symbol_file = symfile.loaded(target)
    context.evaluate = lambda text: _evaluate(exe_ctx, text)
    return context


def _evaluate(exe_ctx, text: str) -> int:
    """An address: a number, the selected frame's pc ("$pc"), or another register of
    a frame LLDB unwound itself ("$rsp").  No expression evaluation: it may run code in
    the process.  (A frame the provider made has a pc but no registers of its own.)"""
    text = text.strip()
    frame = exe_ctx.GetFrame()
    if text in ("$pc", "$rip") and frame.IsValid():
        return frame.GetPC()
    if text.startswith("$") and frame.IsValid() and not frame.IsSynthetic():
        register = frame.FindRegister(text[1:])
        if register.IsValid() and register.GetValue() is not None:
            return register.GetValueAsUnsigned()
    if text.startswith("$"):
        raise CommandError(f"{text}: no such register in the selected frame.")
    try:
        return int(text, 0)
    except ValueError:
        raise CommandError(f"{text!r} is no address: give a number or a register "
                           "($pc).") from None


def _setting_changed(name: str, debugger) -> None:
    changed(name, debugger)
    refresh_providers(debugger)  # bt shows the new setting at this stop


def _argument(item: Registered, command: str):
    if not item.command.split:
        return command
    try:
        return shlex.split(command)
    except ValueError as error:
        raise CommandError(f"{item.name}: {error}") from None


class _Command:
    """A declared command (``ITEM``): CommandError is the user's error; nothing else
    leaves as a traceback."""

    ITEM: Registered

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return short_help(self.ITEM.help)

    def get_long_help(self):
        return long_help(lldb_help(self.ITEM.help))

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            text = self.ITEM.command.run(_context(self.ITEM, debugger, exe_ctx),
                                         _argument(self.ITEM, command))
            result.AppendMessage(lldb_help(text))  # the commands as LLDB names them
        except CommandError as error:
            result.SetError(lldb_help(str(error)))
        except Exception as error:  # LLDB calls in (a command): never a traceback
            result.SetError(f"{self.ITEM.name}: {error}")


def command_classes(debugger_name: str):
    """(name, class) for each declared command, the classes put in this module, where
    LLDB finds them by name."""
    made = []
    for item in for_debugger(debugger_name):
        cls = type(class_name(item.name), (_Command,), {"ITEM": item})
        globals()[cls.__name__] = cls
        made.append((item.name, cls))
    return made


def add_commands(debugger) -> None:
    interpreter = debugger.GetCommandInterpreter()
    variant = "lldb" if providers_supported() else "lldb-without-providers"
    for name, cls in command_classes(variant):
        result = lldb.SBCommandReturnObject()
        interpreter.HandleCommand(
            f"command script add -o -c {__name__}.{cls.__name__} {name}", result)
        if not result.Succeeded():
            raise RuntimeError(f"cannot add {name}: {result.GetError()}")
