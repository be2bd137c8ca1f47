"""The perf jitdump of an LLDB process: names and unwind tables of its JIT code."""

import os

import lldb

from ..elf_lookup import symbol_address
from ..regions.jitdump_process import process_jitdump
from .memory import LldbMemory


class _Process:
    """What :func:`process_jitdump` asks of a process, over an SBProcess."""

    def __init__(self, process: "lldb.SBProcess"):
        self._process = process
        self.memory = LldbMemory(process)

    def pid(self):
        pid = self._process.GetProcessID()
        return pid if pid > 0 else None


def add_jitdump_regions(process: "lldb.SBProcess", regions) -> None:
    """Add the jitdump's named regions and unwind records to ``regions``, once per map."""
    if regions.memo.get("lldb-jitdump") or not regions.has_jit():
        return
    regions.memo["lldb-jitdump"] = True
    live = (process.GetPluginName() == "gdb-remote"
            and os.path.exists(f"/proc/{process.GetProcessID()}/maps"))
    mappings = list(regions.mappings)
    try:
        dump = process_jitdump(_Process(process), mappings, "native" if live else "core",
                               lambda name: symbol_address(mappings, name))
        regions.add_symbols(dump.regions())
        regions.add_unwind_records(dump.unwind_records())
    except Exception:  # a dump we cannot read: no names from it, never a traceback
        pass
