"""Reading a real core file's mappings with pyelftools (no debugger in the reading)."""

import re
import struct

from jit_unwind.regions import RegionMap
from jit_unwind.regions.corefile import read_core_mappings
from tests.support import GDB_BINARIES, fixture_binary, run_gdb


def test_core_mappings_show_jit_code_library_code_and_the_vdso(tmp_path):
    core = tmp_path / "toyjit.core"
    output = run_gdb(GDB_BINARIES["gdb13"], [
        "run", "info proc mappings", f"gcore {core}"],
        [fixture_binary("toyjit"), "fp", "0", "sigtrap"], plugin=False)
    mappings, not_jit = read_core_mappings(str(core))
    regions = RegionMap(mappings, not_jit=not_jit, source="core")
    vdso = next((m.start for m in mappings if m.start in not_jit), None)

    # The JIT mapping as the live process had it: anonymous and executable.
    live_anonymous_code = [
        (int(m.group(1), 16), int(m.group(2), 16)) for m in re.finditer(
            r"^\s*(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+\S+\s+\S+\s+r-xp\s*$", output, re.M)]
    assert live_anonymous_code, output
    for start, end in live_anonymous_code:
        region = regions.jit_region_at(start)
        assert region is not None and region.end >= end
    # libc's code is not in the core, yet return addresses into it are executable.
    libc = [m for m in mappings if "libc.so" in m.path and m.executable]
    assert libc, mappings
    assert all(regions.jit_region_at(m.start) is None for m in libc)
    # The vDSO is anonymous executable memory but holds no JIT code.
    assert vdso and regions.jit_region_at(vdso) is None
    # Nor does the kernel's [vsyscall] page that gcore dumps.
    vsyscall = [m for m in mappings if m.start >= 0xFFFF800000000000]
    assert vsyscall and all(m.path == "[vsyscall]" for m in vsyscall), vsyscall
    assert all(regions.jit_region_at(m.start) is None for m in vsyscall)


def test_struct_reader_agrees_with_pyelftools(tmp_path):
    """The program headers and notes read with struct give what pyelftools reads."""
    from jit_unwind.regions.corefile import _read_headers, _read_with_pyelftools
    core = tmp_path / "threads.core"
    run_gdb(GDB_BINARIES["gdb13"], ["run", f"gcore {core}"],
            [fixture_binary("toyjit"), "fp", "0", "sigtrap"], plugin=False)
    with open(core, "rb") as handle:
        fast = _read_headers(handle)
        handle.seek(0)
        full = _read_with_pyelftools(handle)
    files, vdso, loads = fast
    assert files and vdso and loads
    assert any(path.endswith("toyjit") for _start, _end, path, _offset in files), files
    assert fast == full


def _core(path, code: bytes, at: int = 0x5500843000) -> None:
    """A core of one executable page holding ``code``, and an auxv without a vDSO (as
    qemu-user writes them)."""
    auxv = struct.pack("<QQQQ", 6, 0x1000, 0, 0)  # AT_PAGESZ, AT_NULL
    note = struct.pack("<III", 5, len(auxv), 6) + b"CORE\0\0\0\0" + auxv
    phoff, notes_at, page_at = 64, 64 + 2 * 56, 0x1000
    header = (b"\x7fELF\x02\x01\x01" + bytes(9)
              + struct.pack("<HHIQQQIHHHHHH", 4, 183, 1, 0, phoff, 0, 0, 64, 56, 2, 0, 0, 0))
    headers = (struct.pack("<IIQQQQQQ", 4, 0, notes_at, 0, 0, len(note), 0, 4)
               + struct.pack("<IIQQQQQQ", 1, 5, page_at, at, 0, 0x1000, 0x1000, 0x1000))
    body = header + headers + note
    path.write_bytes(body + bytes(page_at - len(body)) + code.ljust(0x1000, b"\0"))


def test_an_emulators_signal_trampoline_is_no_jit_code(tmp_path):
    """qemu-user maps a page of rt_sigreturn where the kernel would map the vDSO: not
    JIT code; a page of other code is."""
    trampoline, other = tmp_path / "trampoline.core", tmp_path / "jit.core"
    _core(trampoline, bytes.fromhex("681180d2010000d4"))  # mov x8, #139; svc #0
    _core(other, bytes.fromhex("fd7bbfa9fd030091"))  # stp x29, x30, [sp, #-16]!; mov x29, sp
    for path, expected in ((trampoline, []), (other, [0x5500843000])):
        mappings, not_jit = read_core_mappings(str(path))
        regions = RegionMap(mappings, not_jit=not_jit, source="core")
        assert [region.start for region in regions.jit] == expected, (path, mappings)
