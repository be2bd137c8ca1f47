"""regions/minidump.py: a minidump's copy of /proc/PID/maps (its LinuxMaps stream), with
the file offsets LLDB's region list of a minidump leaves out; laid out here as LLDB's
``process save-core`` writes it (header, stream directory, streams)."""

import struct

from jit_unwind.model import Mapping
from jit_unwind.regions.minidump import LINUX_MAPS, minidump_maps

MAPS = ("555555554000-555555555000 r--p 00000000 fe:00 42    /usr/bin/node\n"
        "555555555000-555555556000 r-xp 00001000 fe:00 42    /usr/bin/node\n"
        "7fffefe40000-7fffeffd2000 r-xp 014c4000 fe:00 42    /usr/bin/node\n"
        "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0     [stack]\n")


def _minidump(streams):
    """Header, directory, then each (type, data) stream."""
    directory = 32
    at = directory + 12 * len(streams)
    entries, data = b"", b""
    for kind, body in streams:
        entries += struct.pack("<III", kind, len(body), at + len(data))
        data += body
    header = struct.pack("<4sIIIIIQ", b"MDMP", 0xA793, len(streams), directory, 0, 0, 0)
    return header + entries + data


def test_the_maps_stream_gives_each_mapping_its_file_offset(tmp_path):
    path = tmp_path / "program.dmp"
    path.write_bytes(_minidump([(0x7, b"\0" * 56), (LINUX_MAPS, MAPS.encode())]))
    mappings = minidump_maps(str(path))
    assert mappings[2] == Mapping(0x7FFFEFE40000, 0x7FFFEFFD2000, "r-xp", "/usr/bin/node",
                                  0x14C4000)
    assert [m.path for m in mappings] == ["/usr/bin/node"] * 3 + ["[stack]"]
    assert minidump_maps(str(path)) is mappings  # the same list while the file is


def test_no_minidump_or_no_maps_stream_gives_none(tmp_path):
    without = tmp_path / "without.dmp"
    without.write_bytes(_minidump([(0x7, b"\0" * 56)]))
    truncated = tmp_path / "truncated.dmp"
    truncated.write_bytes(_minidump([(LINUX_MAPS, MAPS.encode())])[:40])
    elf = tmp_path / "core"
    elf.write_bytes(b"\x7fELF" + bytes(60))
    for path in (without, truncated, elf, tmp_path / "missing"):
        assert minidump_maps(str(path)) is None, path
