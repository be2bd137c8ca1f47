"""``jit-regions``, ``py-mixed-bt`` and ``jit-unwind`` (settings) for LLDB: the core's
commands (``jit_unwind.commands``) registered with ``command script add -c``."""

import shlex

import lldb

from ..commands import CommandError
from ..commands.jit_regions import HELP as JIT_REGIONS_HELP, jit_regions
from ..commands.mixed_bt import HELP as MIXED_BT_HELP, py_mixed_bt
from .registration import ensure_provider, refresh_providers
from ..regions import jitdump
from .settings import PATH_SETTINGS, SETTINGS, changed, set_setting, show_method
from .state import cache_for


def _is_item(line: str) -> bool:
    """A line starting an item of an indented list ("  --json  ...")."""
    return line.startswith("  ") and not line[2:3].isspace()


def long_help(doc: str) -> str:
    """A docstring as LLDB's help shows it well: LLDB wraps lines itself, so each
    paragraph, and each option with its description, becomes one line."""
    paragraphs = []
    for paragraph in doc.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if lines and _is_item(lines[0]):  # a list of options or settings
            options = []
            for line in lines:
                if _is_item(line) or not options:
                    options.append(line.rstrip())
                else:
                    options[-1] += " " + line.strip()
            paragraphs.append("\n".join(options))
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def _lldb_help(text: str) -> str:
    """The core's help, with GDB's command names as LLDB spells them."""
    return text.replace("info jit-regions", "jit-regions").replace(
        "GDB's JIT interface", "the GDB JIT interface")


def _cache(exe_ctx):
    """The StopCache of the command's process (None without one)."""
    process = exe_ctx.GetProcess()
    if not process.IsValid():
        return None
    ensure_provider(exe_ctx.GetTarget())
    return cache_for(process)


class _Command:
    """A core command: ``run(cache, command)`` returns the text; CommandError is the
    user's error; nothing else leaves as a traceback."""

    HELP = ""
    NAME = ""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return _lldb_help(self.HELP).strip().splitlines()[0]

    def get_long_help(self):
        return long_help(_lldb_help(self.HELP))

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            cache = _cache(exe_ctx)
            if cache is None:
                raise CommandError("No process: launch a program or load a core file "
                                   "first.")
            result.AppendMessage(self.run(cache, command))
        except CommandError as error:
            result.SetError(_lldb_help(str(error)))
        except Exception as error:  # never a traceback
            result.SetError(f"{self.NAME}: {error}")


class JitRegions(_Command):
    HELP = JIT_REGIONS_HELP
    NAME = "jit-regions"

    def run(self, cache, command):
        from . import symfile
        target = cache.process.target
        symfile.refresh(target)  # a safe point: load the symbol file if it is due
        return jit_regions(cache.process, cache, command, symfile.loaded(target))


class PyMixedBt(_Command):
    HELP = MIXED_BT_HELP
    NAME = "py-mixed-bt"

    def run(self, cache, command):
        try:
            argv = shlex.split(command)
        except ValueError as error:
            raise CommandError(f"py-mixed-bt: {error}") from None
        from . import symfile
        symfile.refresh(cache.process.target)  # a safe point (a core file never stops)
        return py_mixed_bt(cache.process, cache, argv, show_method())


JIT_UNWIND_HELP = """Show or change the settings of jit-unwind, which unwinds and names JIT frames.

Usage: jit-unwind [SETTING on|off], or jit-unwind jitdump PATH|auto

Without arguments, prints every setting and its value.

""" + "\n".join(f"  {name:<14} {text}" for name, (_value, text) in SETTINGS.items()) + \
    "\n" + "\n".join(f"  {name:<14} {text}" for name, text in PATH_SETTINGS.items())


class JitUnwindSettings(_Command):
    HELP = JIT_UNWIND_HELP
    NAME = "jit-unwind"

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            result.AppendMessage(self.run(None, command))
            if command.split():
                changed(command.split()[0], debugger)
                refresh_providers(debugger)  # bt shows the new setting at this stop
        except CommandError as error:
            result.SetError(str(error))
        except Exception as error:  # never a traceback
            result.SetError(f"jit-unwind: {error}")

    def run(self, cache, command):
        words = shlex.split(command) if command.strip() else []
        if not words:
            return "\n".join([f"{name}: {'on' if value else 'off'}"
                              for name, (value, _text) in SETTINGS.items()]
                             + [f"jitdump: {jitdump.user_path() or 'auto'}"])
        if words[0] == "jitdump":
            if len(words) != 2:
                raise CommandError("usage: jit-unwind jitdump PATH|auto")
            jitdump.set_user_path(None if words[1] == "auto" else words[1])
            return f"jitdump: {jitdump.user_path() or 'auto'}"
        if len(words) != 2 or words[0] not in SETTINGS or words[1] not in ("on", "off"):
            raise CommandError("usage: jit-unwind [SETTING on|off], SETTING one of "
                               + ", ".join(SETTINGS) + '. Try "help jit-unwind".')
        set_setting(words[0], words[1] == "on")
        return f"{words[0]}: {words[1]}"


COMMANDS = (("jit-regions", "JitRegions"), ("py-mixed-bt", "PyMixedBt"),
            ("jit-unwind", "JitUnwindSettings"))


def add_commands(debugger) -> None:
    interpreter = debugger.GetCommandInterpreter()
    for name, cls in COMMANDS:
        result = lldb.SBCommandReturnObject()
        interpreter.HandleCommand(
            f"command script add -o -c jit_unwind.lldb.commands.{cls} {name}", result)
        if not result.Succeeded():
            raise RuntimeError(f"cannot add {name}: {result.GetError()}")
