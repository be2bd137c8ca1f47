"""docs/guide.md against the code, so that it cannot silently go stale: each GDB and
LLDB command and setting it names exists (commands/registry.py, settings.py), each one
that exists is in it, and so are py-mixed-bt's options and the jit-unwind command's
subcommands and options."""

import re

import pytest

from jit_unwind.commands import settings
from jit_unwind.cli import _parser
from jit_unwind.commands.mixed_bt import parser as mixed_bt_parser
from jit_unwind.commands.registry import for_debugger
from tests.support import REPO

GUIDE = (REPO / "docs" / "guide.md").read_text()


def section(title: str) -> str:
    """The text of the guide's ``## title`` section."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", GUIDE, re.M | re.S)
    assert match, f"docs/guide.md has no section '## {title}'"
    return match.group(1)


def command_names(debugger: str):
    return {registered.name for registered in for_debugger(debugger)}


def setting_names(debugger: str):
    return {setting.name for setting in settings.for_debugger(debugger)}


def test_the_gdb_commands_named_are_gdbs_and_all_are_named():
    text = section("In GDB")
    # The table's rows; `bt` and `disable frame-filter` are GDB's own.
    rows = re.findall(r"^\| `([a-z][^`]*)`", text, re.M)
    named = {re.match(r"(info [a-z-]+|[a-z-]+)", row).group(1) for row in rows
             if not row.startswith(("bt", "set ", "disable "))}
    assert named == command_names("gdb")


def test_every_set_jit_unwind_setting_named_exists_and_all_are_named():
    named = set(re.findall(r"\bset jit-unwind ([a-z][a-z-]*)", GUIDE))
    assert named <= setting_names("gdb"), named - setting_names("gdb")
    in_gdb_section = set(re.findall(r"`set jit-unwind ([a-z-]+)", section("In GDB")))
    assert in_gdb_section == setting_names("gdb")


def test_the_lldb_commands_and_settings_named_are_lldbs_and_all_are_named():
    text = section("In LLDB")
    rows = re.findall(r"^\| `([a-z][a-z-]*)(?: ([a-z][a-z-]*))?[` ]", text, re.M)
    commands = {command for command, _ in rows}
    assert commands == command_names("lldb"), commands
    named = {word for command, word in rows if command == "jit-unwind" and word}
    assert named == setting_names("lldb"), named


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_py_mixed_bt_options_are_the_parsers(debugger):
    title = "In GDB" if debugger == "gdb" else "In LLDB"
    usage = re.search(r"`py-mixed-bt ([^`]*)`", section(title)).group(1)
    named = set(re.findall(r"--[a-z-]+", usage))
    options = {option for action in mixed_bt_parser()._actions
               for option in action.option_strings if option.startswith("--")}
    assert named == options


def test_every_jit_unwind_subcommand_and_option_is_in_the_guide():
    text = section("The jit-unwind command")
    subparsers = next(action for action in _parser()._actions
                      if action.dest == "command").choices
    for name, subparser in subparsers.items():
        assert f"jit-unwind {name}" in text, name
        for action in subparser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert f"`{option}" in text, f"jit-unwind {name} {option}"

