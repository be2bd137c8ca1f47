"""unwind/cfi.py on the toy JIT's own .eh_frame (gcc's CFI for a frame-pointer
function and for _start), with the stack as recorded bytes."""

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.target import BytesMemory
from jit_unwind.unwind.cfi import OUTERMOST, unwind_with_cfi
from tests.support import fixture_binary


def _symbol(name):
    with open(fixture_binary("toyjit"), "rb") as handle:
        symbol = ELFFile(handle).get_section_by_name(".symtab").get_symbol_by_name(name)[0]
        return symbol["st_value"], symbol["st_size"]


def test_frame_pointer_function_after_its_prologue():
    start, size = _symbol("call_jit")
    rbp, saved_rbp, return_address = 0x7ffd1000, 0x7ffd1040, 0x555555556000
    memory = BytesMemory({rbp: saved_rbp.to_bytes(8, "little")
                          + return_address.to_bytes(8, "little")})
    caller = unwind_with_cfi(memory, str(fixture_binary("toyjit")), start + size // 2,
                             {"rsp": rbp - 0x20, "rbp": rbp, "rbx": 7})
    assert caller == {"rip": return_address, "rsp": rbp + 16, "rbp": saved_rbp, "rbx": 7}


def test_unreadable_stack_gives_no_answer():
    start, size = _symbol("call_jit")
    caller = unwind_with_cfi(BytesMemory({}), str(fixture_binary("toyjit")),
                             start + size // 2, {"rsp": 0x7ffd0fe0, "rbp": 0x7ffd1000})
    assert caller is None


def test_start_is_the_outermost_frame():
    start, _size = _symbol("_start")
    caller = unwind_with_cfi(BytesMemory({}), str(fixture_binary("toyjit")), start + 4,
                             {"rsp": 0x7ffd1000})
    assert caller is OUTERMOST


def test_no_fde_and_no_file():
    assert unwind_with_cfi(BytesMemory({}), str(fixture_binary("toyjit")), 0x10, {}) is None
    assert unwind_with_cfi(BytesMemory({}), "/nonexistent/file", 0x1000, {}) is None


def test_search_table_finds_the_rows_a_full_scan_finds(tmp_path):
    """The FDE for a pc through .eh_frame_hdr (one entry read) and, in a copy of the
    file without that section, through a scan of every entry: the same rows, on libc."""
    import shutil
    import subprocess

    from jit_unwind.unwind.cfi_rows import EhFrame

    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    copy = tmp_path / "libc-without-hdr.so"
    shutil.copy(libc, copy)
    # Renaming the section hides it from the lookup (objcopy keeps the bytes).
    subprocess.run(["objcopy", "--rename-section", ".eh_frame_hdr=.hidden_hdr", libc,
                    str(copy)], check=True)
    indexed, scanned = EhFrame.of_file(libc), EhFrame.of_file(str(copy))
    assert list(indexed.index) == list(scanned.index) and len(indexed.index) > 1000
    compared = 0
    for start, _offset in list(indexed.index)[::97]:
        for pc in (start, start + 5):
            row = indexed.row_at(pc)
            assert row == scanned.row_at(pc)
            compared += row is not None
    assert compared > 20
    assert indexed.row_at(0) is None


# g++ 12 -O2 -fexceptions: the CIE and FDE of tests/fixtures/cxx_args_size.cc's
# cxx_caller (at 0x1380..0x1404, .eh_frame bytes from file address 0x2170), which pushes
# two stack arguments around calls that may throw: DW_CFA_GNU_args_size 16, 0, 16.
ARGS_SIZE_CFI = bytes.fromhex(
    "1c00000000000000017a504c5200017810079bd51e00001b1b0c070890010000"
    "3000000024000000e8f1ffff840000000493000000410e1086025e0d06428e03"
    "448304442e104d2e006b2e105a0a0c0708410b00")
ARGS_SIZE_ADDRESS = 0x2170
CALLS = {"many (16 bytes of arguments pushed)": 0x13AE, "jit_entry": 0x13BC}


@pytest.mark.parametrize("return_address", CALLS.values(), ids=CALLS.keys())
def test_an_fde_with_gnu_args_size_unwinds(return_address):
    """The row at a call in an FDE holding DW_CFA_GNU_args_size (pyelftools 0.33, the
    venvs' and GDB 18's, gives no rows for the whole FDE: "Unknown CFI opcode"):
    CFA = rbp + 16, rbp, r14 and rbx saved below it."""
    from jit_unwind.unwind.cfi import caller_registers
    from jit_unwind.unwind.cfi_rows import EhFrame

    rbp, saved_rbp, caller_pc = 0x7ffd2000, 0x7ffd2080, 0x5555555551DD
    words = [0xB0, 0x14, saved_rbp, caller_pc]  # rbx, r14, rbp, return address
    memory = BytesMemory({rbp - 16: b"".join(w.to_bytes(8, "little") for w in words)})
    table = EhFrame(ARGS_SIZE_CFI, ARGS_SIZE_ADDRESS)
    row = table.row_at(return_address - 1)
    caller = caller_registers(memory, row, {"rsp": rbp - 0x30, "rbp": rbp, "rbx": 1,
                                            "r14": 2, "r12": 12})
    assert caller == {"rip": caller_pc, "rsp": rbp + 16, "rbp": saved_rbp, "rbx": 0xB0,
                      "r14": 0x14, "r12": 12}
    assert table.row_at(0x1404) is None and table.row_at(0x137F) is None



def test_a_files_headers_are_parsed_once_for_all_its_readers(tmp_path, monkeypatch):
    """Its CFI, its code without CFI and its PT_LOADs come from one parse of its headers
    (each one ~0.1-0.4 ms of a first bt), whose sections are still read after it; a
    rebuilt file is parsed again."""
    import os
    import shutil

    from jit_unwind.elf import rawelf
    from jit_unwind.regions import nocfi_pc
    from jit_unwind.unwind import cfi

    path = str(tmp_path / "toyjit")
    shutil.copy(fixture_binary("toyjit"), path)
    parsed = []
    parse = rawelf.RawElf.__init__
    monkeypatch.setattr(rawelf.RawElf, "__init__",
                        lambda self, handle, name: parsed.append(name) or parse(self, handle,
                                                                                name))
    start, size = _symbol("call_jit")
    rbp, saved_rbp, return_address = 0x7ffd1000, 0x7ffd1040, 0x555555556000
    memory = BytesMemory({rbp: saved_rbp.to_bytes(8, "little")
                          + return_address.to_bytes(8, "little")})
    registers = {"rsp": rbp - 0x20, "rbp": rbp}
    caller = unwind_with_cfi(memory, path, start + size // 2, registers)
    assert caller == {"rip": return_address, "rsp": rbp + 16, "rbp": saved_rbp}
    assert nocfi_pc.file_code(path).exact
    assert rawelf.headers_of(path).loads
    assert parsed == [path]

    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # "rebuilt"
    cfi.cfi_table(path)
    assert parsed == [path, path]
