"""``info jit-regions`` and ``py-mixed-bt``: the core's commands registered with GDB."""

import gdb

from ..commands import CommandError
from ..commands.jit_regions import HELP as JIT_REGIONS_HELP, jit_regions
from ..commands.mixed_bt import HELP as MIXED_BT_HELP, py_mixed_bt
from .settings import show_method
from .state import STATE
from . import symfile


class InfoJitRegions(gdb.Command):
    __doc__ = JIT_REGIONS_HELP

    def __init__(self):
        super().__init__("info jit-regions", gdb.COMMAND_STATUS, gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        symfile.refresh()  # a core loaded by "core-file" has had no stop yet
        loaded = symfile.FILES.loaded
        loaded = (loaded, symfile.FILES.covers) if loaded else None
        try:
            text = jit_regions(STATE.process, STATE, argument, loaded)
        except CommandError as error:
            raise gdb.GdbError(str(error)) from None
        gdb.write(text + "\n")


class PyMixedBt(gdb.Command):
    __doc__ = MIXED_BT_HELP

    def __init__(self):
        super().__init__("py-mixed-bt", gdb.COMMAND_STACK, gdb.COMPLETE_NONE)

    def invoke(self, argument, from_tty):
        symfile.refresh()
        try:
            text = py_mixed_bt(STATE.process, STATE, gdb.string_to_argv(argument),
                               show_method())
        except CommandError as error:
            raise gdb.GdbError(str(error)) from None
        gdb.write(text + "\n")
