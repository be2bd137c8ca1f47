"""``jit-regions``, ``py-mixed-bt`` and ``jit-unwind`` (settings) for LLDB: the core's
commands (``jit_unwind.commands``) registered with ``command script add -c``."""

import shlex

import lldb

from ..commands import CommandError
from ..commands.jit_regions import HELP as JIT_REGIONS_HELP, jit_regions
from ..commands.mixed_bt import HELP as MIXED_BT_HELP, py_mixed_bt
from .registration import ensure_provider, refresh_providers
from .settings import PATHS, SETTINGS, set_setting, show_method
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

Usage: jit-unwind [SETTING on|off], or jit-unwind jitdump [PATH]

Without arguments, prints every setting and its value.

""" + "\n".join(f"  {name:<14} {text}"
                for name, (_value, text) in {**SETTINGS, **PATHS}.items())


def _shown(name: str, value) -> str:
    if name in PATHS:
        return value or "(jit-unwind looks for it)"
    if value is None:
        from .symfile import is_enabled
        return f"{'on' if is_enabled() else 'off'} (default)"
    return "on" if value else "off"


class JitUnwindSettings(_Command):
    HELP = JIT_UNWIND_HELP
    NAME = "jit-unwind"

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            result.AppendMessage(self.run(None, command))
            words = command.split()
            if words and words[0] in ("jitdump", "symbol-file"):
                _reload(debugger, words[0])
            if words:
                refresh_providers(debugger)  # bt shows the new setting at this stop
        except CommandError as error:
            result.SetError(str(error))
        except Exception as error:  # never a traceback
            result.SetError(f"jit-unwind: {error}")

    def run(self, cache, command):
        words = command.split()
        if not words:
            return "\n".join(f"{name}: {_shown(name, value)}"
                             for name, (value, _text) in {**SETTINGS, **PATHS}.items())
        if words[0] == "jitdump":
            return _set_jitdump(command.strip()[len("jitdump"):].strip())
        if len(words) != 2 or words[0] not in SETTINGS or words[1] not in ("on", "off"):
            raise CommandError("usage: jit-unwind [SETTING on|off], SETTING one of "
                               + ", ".join(SETTINGS) + ', or jit-unwind jitdump [PATH]. '
                               'Try "help jit-unwind".')
        set_setting(words[0], words[1] == "on")
        return f"{words[0]}: {words[1]}"


def _set_jitdump(path: str) -> str:
    from ..regions import jitdump
    if path:
        try:
            path = shlex.split(path)[0]
        except (ValueError, IndexError):
            raise CommandError("jit-unwind jitdump: give one PATH") from None
    jitdump.set_user_path(path or None)
    PATHS["jitdump"][0] = jitdump.user_path()
    return f"jitdump: {_shown('jitdump', PATHS['jitdump'][0])}"


def _reload(debugger, name: str) -> None:
    """The setting takes effect at this stop: the per-stop caches (regions named from
    the jitdump) are emptied and each target's symbol file loaded, replaced or removed."""
    from . import symfile
    for index in range(debugger.GetNumTargets()):
        target = debugger.GetTargetAtIndex(index)
        process = target.GetProcess()
        if not process.IsValid():
            continue
        if name == "jitdump":
            cache_for(process).invalidate()
        symfile.refresh(target)


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
