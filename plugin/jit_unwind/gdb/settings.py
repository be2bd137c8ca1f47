"""``set/show jit-unwind NAME``: a GDB parameter for each setting of the core's table
(``jit_unwind.commands.settings``)."""

import gdb

from ..commands import settings
from ..commands.settings import PATH, Setting, SettingError
from .state import STATE


class _Prefix(gdb.Command):
    def __init__(self, verb: str, doc: str):
        self.__doc__ = doc
        super().__init__(f"{verb} jit-unwind", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


def _jitdump_changed() -> None:
    STATE.invalidate()
    gdb.invalidate_cached_frames()  # frames unwound without the file are stale


def _symbol_file_changed() -> None:
    from .symfile import refresh  # the setting takes effect now, not at the next stop
    refresh()


# What a new value does in GDB beyond the core's apply.
_AFTER_SET = {"jitdump": _jitdump_changed, "symbol-file": _symbol_file_changed}


class _Parameter(gdb.Parameter):
    """A setting of the table; GDB keeps its value, the core gets each new one."""

    def __init__(self, setting: Setting):
        self.setting = setting
        self.__doc__ = setting.help_for("gdb")
        self.set_doc = setting.set_doc
        self.show_doc = setting.gdb_show_doc()
        super().__init__(f"jit-unwind {setting.name}",
                         gdb.COMMAND_MAINTENANCE if setting.maintenance else gdb.COMMAND_STACK,
                         gdb.PARAM_OPTIONAL_FILENAME if setting.kind == PATH
                         else gdb.PARAM_BOOLEAN)
        self.value = setting.default

    def get_set_string(self):
        try:
            settings.set_value(self.setting.name, self.value)
        except SettingError as error:
            self.value = settings.value(self.setting.name)  # GDB has stored the new one
            raise gdb.GdbError(f"set jit-unwind {self.setting.name}: {error} "
                               "The setting is unchanged.") from None
        after = _AFTER_SET.get(self.setting.name)
        if after is not None:
            after()
        return ""

    def get_show_string(self, value):
        return self.setting.show_text(value)


_parameters = {}


def register_settings() -> None:
    _Prefix("set", f"Settings of {settings.ABOUT}")
    _Prefix("show", f"Show settings of {settings.ABOUT}")
    for setting in settings.for_debugger("gdb"):
        _parameters[setting.name] = _Parameter(setting)
