"""minidump/: a Linux minidump laid out as Breakpad writes one (its 1232-byte AMD64
context, a thread's stack in both the thread list and the memory list, a 64-bit memory
list, a module with its ELF build ID), read as coreread reads a core."""

import struct

import pytest

from jit_unwind.minidump import MinidumpImage, open_minidump
from jit_unwind.minidump.streams import (LINUX_AUXV, LINUX_MAPS, MEMORY64_LIST, MEMORY_LIST,
                                         MISC_INFO, MODULE_LIST, SYSTEM_INFO, THREAD_LIST)
from jit_unwind.target import MemoryReadError

STACK, HEAP, DATA = 0x7ffd0000, 0x5000000, 0x601000
MAPS = ("00400000-00401000 r-xp 00000000 fe:00 7   /bin/true\n"
        "00601000-00602000 rw-p 00001000 fe:00 7   /bin/true\n"
        "05000000-05002000 rw-p 00000000 00:00 0   [heap]\n"
        "7ffd0000-7ffd1000 rw-p 00000000 00:00 0   [stack]\n")


class Layout:
    """Streams appended after a header and directory, their offsets known."""

    def __init__(self, count):
        self.data = bytearray(32 + 12 * count)
        self.entries = []

    def blob(self, body: bytes) -> int:
        at = len(self.data)
        self.data += body
        return at

    def stream(self, kind, body: bytes) -> None:
        self.entries.append((kind, len(body), self.blob(body)))

    def bytes(self) -> bytes:
        struct.pack_into("<4sIII", self.data, 0, b"MDMP", 0xA793, len(self.entries), 32)
        for index, entry in enumerate(self.entries):
            struct.pack_into("<III", self.data, 32 + 12 * index, *entry)
        return bytes(self.data)


def breakpad_dump(maps=MAPS) -> bytes:
    layout = Layout(8)
    context = bytearray(1232)  # CONTEXT_AMD64: rsp at 152, rbp at 160, rip at 248
    struct.pack_into("<I", context, 48, 0x10000F)
    struct.pack_into("<QQ", context, 152, STACK + 0x100, STACK + 0x200)
    struct.pack_into("<Q", context, 248, 0x400123)
    context_at = layout.blob(bytes(context))
    stack_at = layout.blob(bytes(range(256)) * 16)  # the whole stack page
    thread = struct.pack("<IIIIQQIIII", 42, 0, 0, 0, 0, STACK, 0x1000, stack_at, 1232,
                         context_at)
    layout.stream(THREAD_LIST, struct.pack("<I", 1) + thread)
    # The memory list has the stack's second half again (overlapping the thread's).
    layout.stream(MEMORY_LIST, struct.pack("<IQII", 1, STACK + 0x800, 0x800, stack_at + 0x800))
    layout.stream(MEMORY64_LIST, struct.pack("<QQQQ", 1, 0, HEAP, 0x1000))
    heap_at = layout.blob(b"H" * 0x1000)
    struct.pack_into("<Q", layout.data, layout.entries[-1][2] + 8, heap_at)
    name_at = layout.blob(struct.pack("<I", 18) + "/bin/true".encode("utf-16-le"))
    cv_at = layout.blob(b"LEpB" + bytes.fromhex("00112233445566778899"))
    module = struct.pack("<QIIII", 0x400000, 0x202000, 0, 0, name_at) + bytes(52) + \
        struct.pack("<IIII", 14, cv_at, 0, 0) + bytes(16)
    layout.stream(MODULE_LIST, struct.pack("<I", 1) + module)
    layout.stream(SYSTEM_INFO, struct.pack("<H", 9) + bytes(54))
    layout.stream(MISC_INFO, struct.pack("<III", 24, 1, 4242) + bytes(12))
    layout.stream(LINUX_AUXV, struct.pack("<QQQQ", 9, 0x400100, 0, 0))
    if maps:
        layout.stream(LINUX_MAPS, maps.encode())
    return layout.bytes()


@pytest.fixture
def dump(tmp_path):
    path = tmp_path / "breakpad.dmp"
    path.write_bytes(breakpad_dump())
    return path


def test_threads_memory_modules(dump):
    image = MinidumpImage(dump)
    assert image.machine == 62 and image.pid == 4242
    [thread] = image.threads
    assert thread.pid == 42
    assert (thread.registers["rip"], thread.registers["rsp"]) == (0x400123, STACK + 0x100)
    assert "fs_base" not in thread.registers  # Breakpad's context has none
    # The stack once (the memory list's copy inside it dropped), then the heap.
    assert [(s.start, s.end) for s in image.segments] == [(HEAP, HEAP + 0x1000),
                                                          (STACK, STACK + 0x1000)]
    [module] = image.modules
    assert (module.path, module.build_id) == ("/bin/true", "00112233445566778899")
    assert image.program() is module  # the auxv's entry point is in it
    assert [(f.start, f.path, f.offset) for f in image.files] == [
        (0x400000, "/bin/true", 0), (0x601000, "/bin/true", 0x1000)]


def test_memory_is_the_dump_never_a_written_mapping_of_a_file(dump):
    process = open_minidump(dump)
    memory = process.memory
    assert memory.read(STACK + 0x7FE, 4) == bytes([254, 255, 0, 1])
    assert memory.read(HEAP + 0x10, 2) == b"HH"
    with pytest.raises(MemoryReadError):  # /bin/true's .data: its bytes would be stale
        memory.read(DATA, 8)
    assert process.connection() == "minidump"
    assert process.debugger_mappings()[2].path == "[heap]"


def test_without_a_maps_stream_the_modules_are_the_files(tmp_path):
    path = tmp_path / "crashpad.dmp"
    path.write_bytes(breakpad_dump(maps=""))
    image = MinidumpImage(path)
    assert [(f.start, f.end, f.path) for f in image.files] == [
        (0x400000, 0x602000, "/bin/true")]


def test_not_a_minidump(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(ValueError):
        MinidumpImage(path)
