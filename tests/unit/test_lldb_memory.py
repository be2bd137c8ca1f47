"""jit_unwind.lldb.memory over a process that reads as lldb-19 reads its own core: a
read ends at the end of the segment it starts in.  The e2e scenarios of the stripped
tail-call CPython on lldb-19 cores (tests/e2e/test_scenarios.py) need it."""

import pytest

from jit_unwind.lldb.memory import LldbMemory  # imports the venv's lldb module
from jit_unwind.target import MemoryReadError

DATA = bytes(range(256)) * 32  # 8 KiB: two segments of 4 KiB, one address range


class NoFileSection:
    def GetSection(self):
        return self

    def GetFileByteSize(self):
        return 0


class Target:
    def ResolveLoadAddress(self, address):
        return NoFileSection()


class SegmentedProcess:
    """Reads stop at the end of a segment, as lldb-19's core reads do."""

    def __init__(self, segments, plugin="elf-core"):
        self.segments = segments
        self.plugin = plugin

    def GetPluginName(self):
        return self.plugin

    def GetTarget(self):
        return Target()

    def ReadMemory(self, address, size, error):
        for start, data in self.segments:
            if start <= address < start + len(data):
                return data[address - start:address - start + size]
        error.SetErrorString("core file does not contain 0x%x" % address)
        return None


def adjacent(plugin="elf-core"):
    return SegmentedProcess([(0x10000, DATA[:0x1000]), (0x11000, DATA[0x1000:])], plugin)


def test_a_core_read_goes_on_into_the_next_segment():
    memory = LldbMemory(adjacent())
    assert memory.read(0x10ff8, 16) == DATA[0xff8:0x1008]
    assert memory.read(0x10000, len(DATA)) == DATA


def test_a_core_read_into_a_gap_fails():
    memory = LldbMemory(SegmentedProcess([(0x10000, DATA[:0x1000]),
                                          (0x12000, DATA[:0x1000])]))
    with pytest.raises(MemoryReadError):
        memory.read(0x10ff8, 16)
    assert memory.try_read(0x11ff8, 8) is None


def test_a_live_process_short_read_fails():
    memory = LldbMemory(adjacent(plugin="gdb-remote"))
    assert memory.try_read(0x10ff8, 16) is None
    assert memory.read(0x10ff0, 16) == DATA[0xff0:0x1000]
