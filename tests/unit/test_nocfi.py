"""regions/nocfi.py: which code of a file no FDE covers, on the nocfi fixture, libc, and
shared libraries gcc builds here with and without .debug_frame."""

import os
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.model import Region
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.nocfi_pc import function_in
from jit_unwind.regions.nocfi import (_eh_frame_ranges, _is_padding, RawElf,
                                      _ranges_from_pyelftools, uncovered_ranges)
from tests.support import REPO, fixture_binary

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """What is computed here is kept on disk (elf_facts.py): in this test's directory,
    not the user's cache (libraries built in tmp_path would fill it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elf-facts-cache"))


NOCFI_FUNCTIONS = ("asm_fp_function", "asm_frameless_function", "c_frameless_function")


def _symbols(path):
    with open(path, "rb") as handle:
        table = ELFFile(handle).get_section_by_name(".symtab")
        return {s.name: (s["st_value"], s["st_value"] + s["st_size"])
                for s in table.iter_symbols() if s["st_info"]["type"] == "STT_FUNC"}


def _covered(ranges, start, end):
    return any(low <= start and end <= high for low, high in ranges)


def _touches(ranges, start, end):
    return any(low < end and start < high for low, high in ranges)


def test_functions_without_cfi_are_uncovered_and_others_not():
    path = str(fixture_binary("nocfi"))
    gaps = uncovered_ranges(path)
    symbols = _symbols(path)
    for name in NOCFI_FUNCTIONS:
        assert _covered(gaps, *symbols[name]), (name, gaps)
    for name in ("main", "call_nocfi", "nocfi_callback", "nocfi_stop", "_start"):
        assert not _touches(gaps, *symbols[name]), (name, gaps)


def test_search_table_agrees_with_the_full_parse():
    for path in (str(fixture_binary("nocfi")), LIBC):
        with open(path, "rb") as handle:
            fast = sorted(_eh_frame_ranges(RawElf(handle, path)))
        with open(path, "rb") as handle:
            full = sorted(_ranges_from_pyelftools(
                ELFFile(handle).get_dwarf_info(follow_links=False).EH_CFI_entries()))
        assert fast == full != [], path


def test_padding_is_not_code():
    assert _is_padding(b"\x90\xcc\x00")
    assert _is_padding(b"\x66\x2e\x0f\x1f\x84\x00\x00\x00\x00\x00\x0f\x1f\x40\x00")
    assert _is_padding(b"\x66\x0f\x1f\x44\x00\x00\x0f\x1f\x00")
    assert not _is_padding(b"\x55\x48\x89\xe5")  # push rbp; mov rbp, rsp
    assert not _is_padding(b"\xc3")


def test_region_map_finds_the_function_at_its_load_address():
    """A PIE mapped at a bias: the range lookup and the function's symbol."""
    path = str(fixture_binary("nocfi"))
    bias = 0x555555554000
    with open(path, "rb") as handle:
        loads = [s for s in ELFFile(handle).iter_segments() if s["p_type"] == "PT_LOAD"]
    mappings = [Mapping(bias + (s["p_vaddr"] & ~0xFFF),
                        bias + ((s["p_vaddr"] + s["p_memsz"] + 0xFFF) & ~0xFFF),
                        "r-xp" if s["p_flags"] & 1 else "r--p", path, s["p_offset"] & ~0xFFF)
                for s in loads]
    regions = RegionMap(mappings)
    start, end = _symbols(path)["asm_frameless_function"]
    region = regions.nocfi_at(bias + start + 5)
    assert region is not None and region.source == "no-cfi"
    function = function_in(region, bias + start + 5)
    assert (function.start, function.end, function.name) == (
        bias + start, bias + end, "asm_frameless_function")
    main_start, _ = _symbols(path)["main"]
    assert regions.nocfi_at(bias + main_start + 1) is None
    assert not regions.has_jit()
    # What the unwinder asks per frame, memoized: the same answers.
    for _ in range(2):
        assert regions.code_at(bias + start + 5) == region
        assert regions.code_at(bias + main_start + 1) is None


def _pie_mappings(path, bias):
    with open(path, "rb") as handle:
        loads = [s for s in ELFFile(handle).iter_segments() if s["p_type"] == "PT_LOAD"]
    return [Mapping(bias + (s["p_vaddr"] & ~0xFFF),
                    bias + ((s["p_vaddr"] + s["p_memsz"] + 0xFFF) & ~0xFFF),
                    "r-xp" if s["p_flags"] & 1 else "r--p", path, s["p_offset"] & ~0xFFF)
            for s in loads]


def test_perf_map_lines_naming_a_files_code_without_cfi_are_kept():
    """V8 lists its embedded builtins (code it generated into node's executable, no
    CFI) in its perf map: those lines name the code and it is unwound as JIT code.  A
    line naming a function the file's CFI covers is ordinary code, dropped."""
    path = str(fixture_binary("nocfi"))
    bias = 0x555555554000
    symbols = _symbols(path)
    builtin, _ = symbols["asm_frameless_function"]
    ordinary, _ = symbols["main"]
    regions = RegionMap(_pie_mappings(path, bias), [
        Region(bias + builtin, bias + builtin + 0x10, "perf-map", "Builtin:JSEntry"),
        Region(bias + ordinary, bias + ordinary + 0x10, "perf-map", "stale main")])
    assert regions.symbol_at(bias + builtin + 5).name == "Builtin:JSEntry"
    assert regions.code_at(bias + builtin + 5).name == "Builtin:JSEntry"
    assert regions.symbol_at(bias + ordinary + 5) is None
    assert regions.code_at(bias + ordinary + 5) is None
    assert not regions.near_jit(bias + ordinary + 5)


def test_debug_frame_counts_as_cfi(tmp_path):
    """gcc -g without unwind tables writes .debug_frame, which debuggers read: that
    code has CFI.  Without -g it has none."""
    source = REPO / "tests" / "fixtures" / "nocfi_c.c"
    flags = ["-shared", "-fPIC", "-O1", "-fno-asynchronous-unwind-tables",
             "-fno-unwind-tables", "-fomit-frame-pointer"]
    results = {}
    for debug in ("-g", "-g0"):
        library = tmp_path / f"lib{debug}.so"
        subprocess.run(["gcc", *flags, debug, "-o", str(library), str(source)], check=True)
        start, end = _symbols(library)["c_frameless_function"]
        results[debug] = _touches(uncovered_ranges(str(library)), start, end)
    assert results == {"-g": False, "-g0": True}


def test_one_pc_lookup_agrees_with_the_gaps():
    """regions/nocfi_pc (a binary search and the FDEs around one pc) says covered
    exactly where the file's gaps leave out code: functions with CFI are covered, those
    without not; libc's FDEs cover their pcs (its other CFI is not needed for them)."""
    from jit_unwind.regions import nocfi_pc
    path = str(fixture_binary("nocfi"))
    symbols = _symbols(path)
    for name in NOCFI_FUNCTIONS:
        start, end = symbols[name]
        gap = nocfi_pc.gap_at(path, start)
        assert gap is not None and gap == nocfi_pc.gap_at(path, end - 1), name
        assert gap[0] <= start and end <= gap[1], name
    for name in ("main", "call_nocfi", "nocfi_callback", "nocfi_stop"):
        start, end = symbols[name]
        assert nocfi_pc.gap_at(path, start) is None is nocfi_pc.gap_at(path, end - 1), name
    with open(LIBC, "rb") as handle:
        ranges = sorted(_eh_frame_ranges(RawElf(handle, LIBC)))
    for start, end in ranges[::50]:
        assert nocfi_pc.gap_at(LIBC, start) is None is nocfi_pc.gap_at(LIBC, end - 1), (
            start, end)


def test_a_second_mapping_of_a_files_code_is_that_code_at_its_own_offset():
    """V8 maps node's embedded builtins a second time near its JIT code (the same file
    offsets, elsewhere): a pc there is the file's code without CFI at that offset,
    named from the file's symbols.  A mapping list without offsets (a minidump's, as
    LLDB lists it) gives no such copy a wrong name."""
    path = str(fixture_binary("nocfi"))
    bias = 0x555555554000
    mappings = _pie_mappings(path, bias)
    text = next(m for m in mappings if m.executable)
    copy = 0x7FFFEF000000
    start, end = _symbols(path)["asm_frameless_function"]
    pc = copy + (bias + start - text.start) + 5
    regions = RegionMap(mappings + [Mapping(copy, copy + text.end - text.start, "r-xp",
                                            path, text.offset)])
    region = regions.nocfi_at(pc)
    assert region is not None
    function = function_in(region, pc)
    assert (function.name, function.start, function.end) == (
        "asm_frameless_function", pc - 5, pc - 5 + end - start)
    assert regions.nocfi_at(bias + start + 5).owner == bias  # the file's own mapping
    without_offsets = RegionMap([Mapping(m.start, m.end, m.perms, m.path) for m in mappings]
                                + [Mapping(copy, copy + text.end - text.start, "r-xp", path)])
    region = without_offsets.nocfi_at(pc)
    assert region is None or function_in(region, pc) is None


def test_a_files_gaps_are_kept_on_disk_for_the_next_session(tmp_path, monkeypatch):
    """A file's code without CFI and the function symbols in it are written to
    $XDG_CACHE_HOME/jit-unwind/elf-facts: the next session reads them (nothing is computed)
    and gets the same; an entry damaged, or a separate debug file appearing (its
    .debug_frame counts as CFI), makes them computed again; JIT_UNWIND_ELF_CACHE=0
    writes nothing."""
    from jit_unwind.elf import debug_files
    from jit_unwind.regions import nocfi
    path = str(fixture_binary("nocfi"))
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("JIT_UNWIND_ELF_CACHE", raising=False)
    monkeypatch.setattr(debug_files, "DEBUG_ROOT", str(tmp_path / "debug"))
    computed = []

    def counted(function):
        def compute(path):
            computed.append(function.__name__)
            return function(path)
        return compute

    monkeypatch.setattr(nocfi, "_compute_gaps", counted(nocfi._compute_gaps))
    monkeypatch.setattr(nocfi, "_read_function_symbols",
                        counted(nocfi._read_function_symbols))

    def session():
        """What a new session finds: the memory caches empty."""
        nocfi._gaps.clear()
        nocfi._functions.clear()
        computed.clear()
        return nocfi.uncovered_ranges(path), nocfi._function_symbols(path)

    first = session()
    assert computed == ["_compute_gaps", "_read_function_symbols"]
    names = {name for _start, _end, name in first[1]}
    assert set(NOCFI_FUNCTIONS) <= names and first[0], first
    entries = sorted((cache / "jit-unwind" / "elf-facts").glob("*-nocfi-*.fact"))
    assert [entry.name.split("-")[-1] for entry in entries] == ["functions.fact",
                                                                 "gaps.fact"]
    assert session() == first and computed == []

    entries[1].write_bytes(b"\x00garbage")
    assert session() == first and computed == ["_compute_gaps"]
    assert session() == first and computed == []

    with open(path, "rb") as handle:
        debug = debug_files.by_build_id(RawElf(handle, path))
    assert debug is not None and debug.startswith(str(tmp_path / "debug"))
    os.makedirs(os.path.dirname(debug))
    with open(debug, "wb") as handle:
        handle.write(b"not ELF: no .debug_frame")
    assert session() == first
    assert computed == ["_compute_gaps", "_read_function_symbols"]

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "off"))
    monkeypatch.setenv("JIT_UNWIND_ELF_CACHE", "0")
    assert session() == first and len(computed) == 2
    assert not (tmp_path / "off").exists()
    nocfi._gaps.clear()
    nocfi._functions.clear()
