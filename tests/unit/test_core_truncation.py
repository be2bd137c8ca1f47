"""A core file cut short: its size against its program headers, what it lost."""

import struct

from jit_unwind.regions.core_truncation import core_truncation, describe

PT_LOAD = 1
STACK, DATA = 0x7FFF0000, 0x555555000000


def _core(path, loads, size):
    """An ELF core of ``loads`` ((vaddr, offset, filesz)), the file cut at ``size``."""
    phoff, count = 64, len(loads)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<HH", header, 16, 4, 62)  # ET_CORE, x86-64
    struct.pack_into("<Q", header, 32, phoff)
    struct.pack_into("<HH", header, 54, 56, count)
    table = b"".join(struct.pack("<IIQQQQQQ", PT_LOAD, 6, offset, vaddr, 0, filesz, filesz,
                                 0x1000) for vaddr, offset, filesz in loads)
    data = bytes(header) + table
    path.write_bytes((data + bytes(max(0, size - len(data))))[:max(size, len(data))])
    return str(path)


def test_a_whole_core_is_not_truncated(tmp_path):
    path = _core(tmp_path / "whole", [(DATA, 0x1000, 0x1000), (STACK, 0x2000, 0x1000)], 0x3000)
    assert core_truncation(path) is None


def test_a_cut_core_names_the_stack_and_runtime_it_lost(tmp_path):
    path = _core(tmp_path / "cut", [(DATA, 0x1000, 0x1000), (STACK, 0x2000, 0x1000)], 0x2100)
    cut = core_truncation(path)
    assert (cut.size, cut.needed) == (0x2100, 0x3000)
    # The stack's first 0x100 bytes are there: the sp below them loses its callers.
    text = describe(cut, [(STACK + 0x80, "the stack of thread 1", True),
                          (DATA + 0x10, "_PyRuntime", False)])
    assert text == (f"the core file {path} is truncated: it has 8448 bytes, its program "
                    f"headers need 12288; missing: the stack of thread 1 "
                    f"(0x7fff0100-0x7fff1000)")
    # _PyRuntime's segment is whole; a segment lost without a name is counted.
    path = _core(tmp_path / "cut2", [(DATA, 0x1000, 0x1000), (STACK, 0x2000, 0x1000)], 0x1800)
    text = describe(core_truncation(path), [(DATA + 0x900, "_PyRuntime", False)])
    assert text.endswith("missing: _PyRuntime (0x555555000800-0x555555001000), and 1 other "
                         "segment of memory (4.0 KiB)"), text
