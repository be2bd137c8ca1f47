"""Commands and settings declared once (commands/registry.py, settings.py): what each
debugger's adapter registers comes from these tables alone, so a command declared in one
file of commands/ reaches both debuggers."""

import pytest

from jit_unwind.commands import settings
from jit_unwind.commands import CommandError
from jit_unwind.commands.jit_unwind_settings import help_text, jit_unwind
from jit_unwind.commands.registry import (COMMANDS, Command, Context, declare, for_debugger,
                                          remove)
from jit_unwind.regions import jitdump


@pytest.fixture
def throwaway():
    """A command declared as a file of commands/ would declare it, removed afterwards."""
    command = declare(Command(names={"gdb": "info throwaway", "lldb": "throwaway"},
                              help="Say hello.\n\nUsage: throwaway WORDS", split=True,
                              run=lambda context, words: f"hello {' '.join(words)}"))
    yield command
    remove(command)
    assert command not in COMMANDS


@pytest.fixture
def restored_settings():
    """The settings' values (module-wide) as they were."""
    values = dict(settings._values)
    yield
    settings._values.update(values)
    jitdump.set_user_path(None)


def test_both_debuggers_register_a_new_command_from_the_table(throwaway):
    for debugger, name in (("gdb", "info throwaway"), ("lldb", "throwaway"),
                           ("lldb-without-providers", "throwaway")):
        items = {item.name: item for item in for_debugger(debugger)}
        assert items[name].help.startswith("Say hello.")
        assert items[name].command.run(Context(), ["a", "b"]) == "hello a b"
    remove(throwaway)
    assert "throwaway" not in {item.name for item in for_debugger("lldb")}
    declare(throwaway)  # for the fixture's remove


def test_the_lldb_adapter_makes_a_class_for_a_new_command(throwaway):
    from jit_unwind.lldb import commands  # the venv's LLDB 23 module (make venv)
    classes = dict(commands.command_classes("lldb"))
    try:
        made = classes["throwaway"]
        assert made.__name__ == "Throwaway" and commands.Throwaway is made
        assert made(None, {}).get_short_help() == "Say hello."
    finally:
        for cls in classes.values():  # the module's own classes come back at install
            delattr(commands, cls.__name__)


def test_todays_commands_keep_their_names():
    assert sorted(i.name for i in for_debugger("gdb")) == ["info jit-regions", "py-mixed-bt"]
    assert sorted(i.name for i in for_debugger("lldb")) == ["jit-regions", "jit-unwind",
                                                            "py-mixed-bt"]


def test_every_gdb_help_names_jit_unwind():
    """GDB's "apropos jit-unwind" lists each command and setting (their first lines)."""
    for item in for_debugger("gdb"):
        assert "jit-unwind" in item.help, item.name
        assert len(item.help.splitlines()[0]) < 80, item.name
    for setting in settings.for_debugger("gdb"):
        assert "jit-unwind" in setting.set_doc, setting.name
        assert len(setting.set_doc) < 80, setting.name


def test_each_debugger_has_its_settings():
    assert [s.name for s in settings.for_debugger("gdb")] == [
        "show-method", "debug", "symbol-file", "jitdump"]
    assert [s.name for s in settings.for_debugger("lldb")] == [
        "show-method", "debug", "python-frames", "frame-format", "symbol-file", "jitdump"]
    for setting in settings.for_debugger("gdb"):
        assert setting.set_doc.startswith("Set ") and setting.show
        assert setting.gdb_show_doc().startswith("Show ")
        assert setting.help_for("gdb") and setting.help_for("lldb")


def test_a_help_may_differ_in_a_variant_of_a_debugger():
    frame_format = settings.SETTINGS["frame-format"]
    assert "no frame providers" in frame_format.help_for("lldb-without-providers")
    assert "no frame providers" not in frame_format.help_for("lldb")
    assert "no frame providers" in help_text("lldb-without-providers")
    assert settings.SETTINGS["debug"].help_for("lldb-without-providers") == \
        settings.SETTINGS["debug"].help_for("lldb")


def test_the_lldb_settings_command_lists_and_sets(restored_settings, tmp_path):
    dump = tmp_path / "x.dump"
    dump.write_bytes(b"")
    changed = []
    context = Context(setting_changed=changed.append)
    assert jit_unwind(context, []).splitlines() == [
        "show-method: off", "debug: off", "python-frames: on", "frame-format: on",
        "symbol-file: on", "jitdump: auto"]
    assert jit_unwind(context, ["show-method", "on"]) == "show-method: on"
    assert settings.value("show-method") is True
    assert jit_unwind(context, ["jitdump", str(dump)]) == f"jitdump: {dump}"
    assert jitdump.user_path() == str(dump)  # the core's effect of the setting
    with pytest.raises(CommandError, match=r"^jit-unwind jitdump: /nonexistent: no such "
                                           r"file\. It stays .*x\.dump\.$"):
        jit_unwind(context, ["jitdump", "/nonexistent"])
    assert jitdump.user_path() == str(dump)
    assert jit_unwind(context, ["jitdump", "auto"]) == "jitdump: auto"
    assert jitdump.user_path() is None
    assert changed == ["show-method", "jitdump", "jitdump"]
    with pytest.raises(CommandError, match=r"^usage: jit-unwind \[SETTING on\|off\], "
                                           r"SETTING one of show-method, debug, "
                                           r"python-frames, frame-format, symbol-file, or "
                                           r"jit-unwind jitdump PATH\|auto\."):
        jit_unwind(context, ["show-method", "maybe"])
    with pytest.raises(CommandError, match=r"^usage: jit-unwind jitdump PATH\|auto$"):
        jit_unwind(context, ["jitdump"])
    assert changed == ["show-method", "jitdump", "jitdump"]


def test_the_settings_help_lists_every_setting():
    text = help_text("lldb")
    assert text.splitlines()[2] == ("Usage: jit-unwind [SETTING on|off], or jit-unwind "
                                    "jitdump PATH|auto")
    for setting in settings.for_debugger("lldb"):
        assert f"  {setting.name:<14} {setting.help_for('lldb')}" in text


def test_every_module_declaring_a_command_is_loaded_and_no_other():
    """commands/registry.py imports COMMAND_MODULES at the debugger's start-up: every
    module of commands/ that declares a command, and none of the others (the renderers
    would bring the stack's modules into every session's start)."""
    import ast
    from pathlib import Path

    from jit_unwind.commands import registry
    folder = Path(registry.__file__).parent
    declaring = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "registry" and any(
                    alias.name == "declare" for alias in node.names):
                declaring.add(path.stem)
    assert declaring == set(registry.COMMAND_MODULES)
