"""Parsing mappings and perf maps, and the region map's answers."""

from jit_unwind.model import Region
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.perfmap import parse_perf_map
from jit_unwind.regions.procmaps import parse_proc_maps

MAPS = """\
555555554000-555555555000 r--p 00000000 fe:01 123 /usr/bin/prog
555555555000-555555556000 r-xp 00001000 fe:01 123 /usr/bin/prog
7ffff7fbe000-7ffff7fc0000 r-xp 00000000 00:00 0
7ffff7fc8000-7ffff7fca000 r-xp 00000000 00:00 0                          [vdso]
7ffff7fd0000-7ffff7fd1000 r-xp 00000000 00:01 77                         /memfd:jit (deleted)
7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]
"""


def test_proc_maps_and_which_mappings_hold_jit_code():
    mappings = parse_proc_maps(MAPS)
    assert len(mappings) == 6
    regions = RegionMap(mappings)
    assert regions.jit_region_at(0x7FFFF7FBF018).start == 0x7FFFF7FBE000
    assert regions.jit_region_at(0x7FFFF7FD0010) is not None  # memfd-backed JIT
    assert regions.jit_region_at(0x555555555100) is None      # program code
    assert regions.jit_region_at(0x7FFFF7FC8100) is None      # vDSO
    assert regions.is_executable(0x555555555100)
    assert not regions.is_executable(0x7FFFFFFFE000)
    assert regions.mapping_at(0x7FFFFFFFE000).path == "[stack]"


def test_perf_map_lines():
    entries = parse_perf_map("7f0000001000 b py::f:/app.py\n"
                             "0x7f0000002000 0x20 toy::jit_fp\n"
                             "garbage line\n7f0000003000 0 empty\n")
    assert [(e.start, e.size, e.name) for e in entries] == [
        (0x7F0000001000, 0xB, "py::f:/app.py"), (0x7F0000002000, 0x20, "toy::jit_fp")]


def test_later_perf_map_lines_win_over_stale_ones():
    stale, fresh = parse_perf_map("1000 100 stale\n1000 b fresh\n")
    regions = RegionMap(symbols=[stale, fresh])
    assert regions.symbol_at(0x1005).name == "fresh"
    assert regions.symbol_at(0x1050).name == "stale"  # only the old entry covers it


def test_a_core_vdso_is_not_jit_code():
    mappings = [Mapping(0x7000, 0x9000, "r-xp"), Mapping(0xA000, 0xB000, "r-xp")]
    regions = RegionMap(mappings, not_jit=[0xA000], source="core")
    assert regions.jit_region_at(0x7100).source == "core"
    assert regions.jit_region_at(0xA100) is None


def test_listing_is_sorted_with_mappings_before_their_entries():
    regions = RegionMap([Mapping(0x1000, 0x3000, "r-xp")],
                        symbols=[Region(0x2000, 0x2010, "perf-map", "b"),
                                 Region(0x1000, 0x1010, "perf-map", "a")])
    assert [(r.start, r.source) for r in regions.listing()] == [
        (0x1000, "maps"), (0x1000, "perf-map"), (0x2000, "perf-map")]


def test_near_jit_answers_for_a_pc_and_a_callers_pc_minus_one():
    regions = RegionMap(parse_proc_maps(MAPS),
                        [Region(0x10000, 0x10100, "perf-map", "outside any mapping")])
    assert regions.near_jit(0x7FFFF7FBE000) and regions.near_jit(0x7FFFF7FBFFFF)
    assert regions.near_jit(0x7FFFF7FC0000)       # a caller's pc: pc - 1 is JIT code
    assert not regions.near_jit(0x7FFFF7FC0001)
    assert not regions.near_jit(0x555555555100)   # program code
    assert not regions.near_jit(0x7FFFF7FC8100)   # vDSO
    # A perf-map line naming unmapped memory is dropped (no JIT code of this process).
    assert not regions.near_jit(0x10080)
    regions.add_symbols([Region(0x20000, 0x20100, "perf-map", "added later")])
    assert regions.near_jit(0x20010)


def test_jit_bounds_hold_every_address_near_jit_code():
    """What a stack scan rules words out by before near_jit's search: everything
    near_jit can say yes to lies within them; nothing does without JIT code."""
    regions = RegionMap(parse_proc_maps(MAPS))
    low, high = regions.jit_bounds()
    assert low <= 0x7FFFF7FBE000 and 0x7FFFF7FC0000 <= high
    assert all(regions.near_jit(pc) == (low <= pc <= high) for pc in
               (low - 1, low, high, high + 1))
    regions.add_symbols([Region(0x7FFFF7FD0000, 0x7FFFF7FD0100, "perf-map", "added")])
    assert regions.jit_bounds()[1] >= 0x7FFFF7FD0000
    low, high = RegionMap([Mapping(0x1000, 0x3000, "r-xp", "/bin/x")]).jit_bounds()
    assert not low <= 0x1000 <= high and not low <= 0 <= high


def test_in_file_code_only_inside_a_files_executable_mapping():
    regions = RegionMap(parse_proc_maps(MAPS))
    assert regions.in_file_code(0x555555555100)
    assert not regions.in_file_code(0x555555555000)  # a caller's pc - 1 is outside
    assert not regions.in_file_code(0x555555554100)  # not executable
    assert not regions.in_file_code(0x7FFFF7FBF018)  # JIT code
    assert not regions.in_file_code(0x7FFFF7FD0010)  # memfd JIT code


def test_gdbs_info_proc_mappings_text():
    from jit_unwind.regions.procmaps import parse_info_proc_mappings
    text = """process 4242
Mapped address spaces:

          Start Addr           End Addr       Size     Offset  Perms  objfile
      0x555555554000     0x555555555000     0x1000        0x0  r--p   /usr/bin/my app
      0x7ffff7fc1000     0x7ffff7fc5000     0x4000     0x2000  r-xp
      0x7ffff7fc5000     0x7ffff7fc6000     0x1000        0x0  nope   /lib/x.so
"""
    mappings = parse_info_proc_mappings(text)
    assert [(m.start, m.end, m.perms, m.path, m.offset) for m in mappings] == [
        (0x555555554000, 0x555555555000, "r--p", "/usr/bin/my app", 0),
        (0x7ffff7fc1000, 0x7ffff7fc5000, "r-xp", "", 0x2000)]
