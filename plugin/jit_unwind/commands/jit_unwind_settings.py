"""LLDB's ``jit-unwind [SETTING VALUE]``: lists or changes the settings of the table
(``jit_unwind.settings``).  GDB has ``set/show jit-unwind NAME`` instead, made from the
same table by its adapter."""

from __future__ import annotations  # annotations unevaluated: less work at load

import os
from typing import List

from . import settings
from .settings import BOOL, PATH, SettingError
from . import CommandError
from .registry import STACK, Command, Context, declare

UNSET = "auto"  # the word for an unset path


def _word(setting: settings.Setting) -> str:
    current = settings.value(setting.name)
    if setting.kind == BOOL:
        return "on" if current else "off"
    return current or UNSET


def help_text(debugger: str) -> str:
    table = settings.for_debugger(debugger)
    paths = "".join(f", or jit-unwind {s.name} PATH|{UNSET}" for s in table if s.kind == PATH)
    lines = [f"  {s.name:<14} {s.help_for(debugger)}" for s in table]
    return (f"Show or change the settings of {settings.ABOUT}\n\n"
            f"Usage: jit-unwind [SETTING on|off]{paths}\n\n"
            "Without arguments, prints every setting and its value.\n\n" + "\n".join(lines))


def _usage(table) -> str:
    paths = "".join(f", or jit-unwind {name} PATH|{UNSET}"
                    for name, s in table.items() if s.kind == PATH)
    return ("usage: jit-unwind [SETTING on|off], SETTING one of "
            + ", ".join(n for n, s in table.items() if s.kind == BOOL)
            + paths + '. Try "help jit-unwind".')


def jit_unwind(context: Context, words: List[str]) -> str:
    """Every setting and its value, or ``NAME VALUE`` set."""
    table = {s.name: s for s in settings.for_debugger("lldb")}
    if not words:
        return "\n".join(f"{name}: {_word(s)}" for name, s in table.items())
    setting = table.get(words[0])
    if setting is None:
        raise CommandError(_usage(table))
    try:
        if setting.kind == PATH:
            if len(words) != 2:
                raise CommandError(f"usage: jit-unwind {setting.name} PATH|{UNSET}")
            settings.set_value(setting.name,
                               "" if words[1] == UNSET else os.path.expanduser(words[1]))
        elif len(words) != 2 or words[1] not in ("on", "off"):
            raise CommandError(_usage(table))
        else:
            settings.set_value(setting.name, words[1] == "on")
    except SettingError as error:
        raise CommandError(f"jit-unwind {setting.name}: {error} "
                           f"It stays {_word(setting)}.") from None
    context.setting_changed(setting.name)
    return f"{setting.name}: {_word(setting)}"


declare(Command(names={"lldb": "jit-unwind"}, help=help_text, run=jit_unwind, split=True,
                needs_process=False, category=STACK))
