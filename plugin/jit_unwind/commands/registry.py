"""The table of the user's commands.  A module of this package declares its command with
:func:`declare`; each debugger's adapter registers every command :func:`for_debugger`
returns, so a new command is one new file here (see docs/design.md)."""

from __future__ import annotations  # annotations unevaluated: less work at load

import importlib
from ..records import record
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

if TYPE_CHECKING:
    from ..debugger import Process
    from ..stop.cache import StopCache

# GDB's help classes a command may be listed under ("help status", "help stack").
STATUS, STACK = "status", "stack"


@record
class Context:
    """What a command runs on, given by the adapter: the process and its per-stop cache
    (None for a command that needs no process), the symbol file for JIT code while one
    is loaded (path, predicate on a Region), what to do after a setting changed, and the
    debugger's value of an address expression ("$pc"; None: numbers only)."""

    process: Optional[Process] = None
    cache: Optional[StopCache] = None
    symbol_file: Optional[Tuple[str, Callable]] = None
    setting_changed: Callable[[str], None] = lambda name: None
    evaluate: Optional[Callable[[str], int]] = None


@record(frozen=True)
class Command:
    """``names``: debugger ("gdb", "lldb") -> the command's name there; a debugger not
    named has no such command.  ``help``: its help, the first line a summary (or a
    function of the debugger giving it).  ``run(context, argument)`` returns the text to
    print or raises CommandError; ``argument`` is the words (split as the debugger
    splits them) when ``split``, else the text after the name.  ``category``: GDB's help
    class."""

    names: Dict[str, str]
    help: Union[str, Callable[[str], str]]
    run: Callable[[Context, Any], str]  # Any: a List[str] when split, else a str
    split: bool = False
    needs_process: bool = True
    category: str = STATUS

    def __init__(self, names: Dict[str, str], help: Union[str, Callable[[str], str]],
                 run: Callable[[Context, Any], str], split: bool = False,
                 needs_process: bool = True, category: str = STATUS):
        # Written out (records.py): compiled, it was ~0.1 ms of the plugin's load.
        self.__dict__.update(names=names, help=help, run=run, split=split,
                             needs_process=needs_process, category=category)

    def help_for(self, debugger: str) -> str:
        return self.help(debugger) if callable(self.help) else self.help


@record(frozen=True)
class Registered:
    """One command as a debugger registers it."""
    name: str
    help: str
    command: Command

    def __init__(self, name: str, help: str, command: Command):
        # Written out, as Command's.
        self.__dict__.update(name=name, help=help, command=command)


def provenance(debugger: str) -> str:
    """The help's last paragraph naming jit-unwind and where its settings are (so that
    GDB's "apropos jit-unwind" finds the command)."""
    where = ('"help jit-unwind"' if debugger.startswith("lldb")
             else '"help set jit-unwind"')
    return f"\n\nA command of jit-unwind; its settings: {where}."


COMMANDS: List[Command] = []


def declare(command: Command) -> Command:
    COMMANDS.append(command)
    return command


def remove(command: Command) -> None:
    COMMANDS.remove(command)


_loaded: List[bool] = []


# The modules that declare a command (``declare``): imported at the debugger's start-up,
# so the package's other modules (the text renderers, the settings) are not.
COMMAND_MODULES = ("jit_regions", "jit_unwind_settings", "mixed_bt")


def _load_all() -> None:
    """Import each module of COMMAND_MODULES once: each declares its command."""
    if _loaded:
        return
    package = __name__.rpartition(".")[0]
    for name in COMMAND_MODULES:
        importlib.import_module(f"{package}.{name}")
    _loaded.append(True)


def for_debugger(debugger: str) -> List[Registered]:
    """What ``debugger`` registers: "gdb", "lldb", or a variant of one
    ("lldb-without-providers") whose helps may differ."""
    _load_all()
    base = debugger.split("-")[0]
    return [Registered(command.names[base], command.help_for(debugger), command)
            for command in COMMANDS if base in command.names]
