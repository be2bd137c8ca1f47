"""unwind/cfi.py on the toy JIT's own .eh_frame (gcc's CFI for a frame-pointer
function and for _start), with the stack as recorded bytes."""

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
    assert indexed._starts == scanned._starts and len(indexed._starts) > 1000
    assert indexed._offsets == scanned._offsets
    compared = 0
    for start in indexed._starts[::97]:
        for pc in (start, start + 5):
            row = indexed.row_at(pc)
            assert row == scanned.row_at(pc)
            compared += row is not None
    assert compared > 20
    assert indexed.row_at(0) is None
