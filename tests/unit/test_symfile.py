"""The symbol file for JIT code (jit_unwind.symfile), read back with pyelftools: which
regions it names, its sections, its symbols, and the CFA rules of its .eh_frame,
checked against the caller a prologue decode finds and evaluated by unwind/cfi.py."""

import os
import stat

from elftools.elf.elffile import ELFFile

from jit_unwind.model import Region
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.symfile import SymbolFiles
from jit_unwind.symfile.build import symbol_file_bytes, symbol_file_regions
from jit_unwind.target import BytesMemory
from jit_unwind.unwind.cfi import unwind_with_cfi

JIT = 0x7F00_0000_0000
JIT2 = 0x7F00_1000_0000
LIB = 0x7F00_0800_0000
STACK = 0x7FFF_0000_0000

# CPython's perf trampolines and the toy JIT's code (tests/fixtures/toyjit.c).
CPYTHON_312_TRAMPOLINE = bytes.fromhex("f30f1efa" "4883ec08" "ffd1" "4883c408" "c3")
CPYTHON_314_TRAMPOLINE = bytes.fromhex("f30f1efa" "55" "4889e5" "ffd1" "5d" "c3")
TOY_FRAMELESS = bytes.fromhex("4883ec08" "48bd" + "ef" * 8 + "48bb" + "11" * 8
                              + "48b8" + "22" * 8 + "ffd0" "4883c408" "c3")
TOY_TRAMPOLINE = bytes.fromhex("f30f1efa" "55" "53" "4154" "4155" "4156" "4157" "4883ec08"
                               "4889f8" "4889f7" "ffd0" "4883c408"
                               "415f415e415d415c5b5d" "c3")
# A function whose body the decoder does not know past its prologue.
UNKNOWN_BODY = bytes.fromhex("55" "4889e5" "0f0b")  # push rbp; mov rbp, rsp; ud2


def _code(*functions):
    """JIT memory holding ``functions`` 64 bytes apart, and their perf-map regions."""
    memory = bytearray(0x1000)
    regions = []
    for index, (name, code) in enumerate(functions):
        memory[index * 64:index * 64 + len(code)] = code
        regions.append(Region(JIT + index * 64, JIT + index * 64 + len(code), "perf-map",
                              name, sequence=index))
    return bytes(memory), regions


def _map(symbols, registered=(), extra_mappings=()):
    mappings = [Mapping(JIT, JIT + 0x1000, "r-xp", ""),
                Mapping(LIB, LIB + 0x1000, "r-xp", "/usr/lib/libfoo.so"),
                Mapping(STACK, STACK + 0x10000, "rw-p", "[stack]"), *extra_mappings]
    return RegionMap(mappings, symbols, registered)


def _write(tmp_path, memory, regions):
    functions = symbol_file_regions(regions)
    path = tmp_path / "jit.elf"
    path.write_bytes(symbol_file_bytes(memory, regions, functions))
    return path


def _elf(path):
    return ELFFile(open(path, "rb"))


def _fde_rows(path):
    """{function start: [(address, CFA offset from rsp, {register: rule})]}"""
    elf = _elf(path)
    tables = {}
    for entry in elf.get_dwarf_info(follow_links=False).EH_CFI_entries():
        header = getattr(entry, "header", None)
        if header is None or "initial_location" not in header:
            continue
        rows = []
        for row in entry.get_decoded().table:
            assert row["cfa"].reg == 7  # rsp
            rules = {reg: (rule.type, rule.arg) for reg, rule in row.items()
                     if isinstance(reg, int) and reg != 16}
            rows.append((row["pc"], row["cfa"].offset, rules))
        tables[header["initial_location"]] = (header["address_range"], rows)
    return tables


def test_symbols_and_sections_name_every_function_at_its_address(tmp_path):
    data, symbols = _code(("py::f:/app.py", CPYTHON_312_TRAMPOLINE),
                          ("toy::frameless", TOY_FRAMELESS))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    elf = _elf(path)
    assert elf["e_machine"] == "EM_X86_64" and elf["e_type"] == "ET_EXEC"
    functions = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC"}
    assert set(functions) == {"py::f:/app.py", "toy::frameless"}
    for region in symbols:
        symbol = functions[region.name]
        assert (symbol["st_value"], symbol["st_size"]) == (region.start, region.size)
        section = elf.get_section(symbol["st_shndx"])
        assert section["sh_type"] == "SHT_NOBITS"  # the bytes stay the process's
        assert section["sh_flags"] & 0x6 == 0x6  # alloc, execinstr
        assert section["sh_addr"] <= region.start and region.end <= (
            section["sh_addr"] + section["sh_size"])
    # A PT_LOAD without file bytes per code section: LLDB's module size (and with it
    # lldb-19's `process save-core`) comes from it.
    sections = [s for s in elf.iter_sections() if s["sh_type"] == "SHT_NOBITS"]
    segments = [(p["p_vaddr"], p["p_memsz"], p["p_filesz"]) for p in elf.iter_segments()
                if p["p_type"] == "PT_LOAD"]
    assert segments == [(s["sh_addr"], s["sh_size"], 0) for s in sections] != []


def test_cpython_312_trampoline_rules(tmp_path):
    data, symbols = _code(("py::f:/app.py", CPYTHON_312_TRAMPOLINE))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    size, rows = _fde_rows(path)[JIT]
    assert size == len(CPYTHON_312_TRAMPOLINE)  # to its ret, inclusive
    # endbr64; sub rsp, 8 (CFA = rsp+16); call *rcx; add rsp, 8 (CFA = rsp+8); ret
    assert [(pc - JIT, offset) for pc, offset, _ in rows] == [(0, 8), (8, 16), (14, 8)]


def test_cpython_314_trampoline_saves_rbp(tmp_path):
    data, symbols = _code(("py::f:/app.py", CPYTHON_314_TRAMPOLINE))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    _size, rows = _fde_rows(path)[JIT]
    by_offset = {pc - JIT: (offset, rules) for pc, offset, rules in rows}
    assert by_offset[5] == (16, {6: ("OFFSET", -16)})  # after push rbp
    assert by_offset[11] == (8, {})  # after pop rbp: restored


def test_clobbered_callee_saved_registers_are_undefined(tmp_path):
    data, symbols = _code(("toy::frameless", TOY_FRAMELESS))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    _size, rows = _fde_rows(path)[JIT]
    last_rules = rows[-1][2]
    assert last_rules[6] == ("UNDEFINED", None) and last_rules[3] == ("UNDEFINED", None)


def test_only_the_understood_prologue_is_covered(tmp_path):
    data, symbols = _code(("v8::f", UNKNOWN_BODY))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    size, _rows = _fde_rows(path)[JIT]
    assert size == 4  # push rbp; mov rbp, rsp; not the ud2


def test_eh_native_steps_like_the_prologue_decoder(tmp_path):
    """unwind/cfi.py (LLDB's CFI evaluator) on the file: the toy entry trampoline's
    caller and registers, at the return address of its call."""
    data, symbols = _code(("toy::trampoline", TOY_TRAMPOLINE))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    return_address = JIT + TOY_TRAMPOLINE.index(bytes.fromhex("ffd0")) + 2
    sp = STACK + 0x800
    saved = [0x15, 0x14, 0x13, 0x12, 0xB0, STACK + 0x900]  # r15..r12, rbx, rbp
    caller_pc = LIB + 0x123
    stack = b"\0" * 8 + b"".join(v.to_bytes(8, "little") for v in saved) + \
        caller_pc.to_bytes(8, "little")
    caller = unwind_with_cfi(BytesMemory({sp: stack}), str(path), return_address - 1,
                             {"rsp": sp, "rbp": 1, "rbx": 2})
    assert caller == {"rip": caller_pc, "rsp": sp + len(stack), "rbp": STACK + 0x900,
                      "rbx": 0xB0, "r12": 0x12, "r13": 0x13, "r14": 0x14, "r15": 0x15}


def test_identical_code_is_described_identically(tmp_path):
    data, symbols = _code(*[(f"py::f{i}:/app.py", CPYTHON_312_TRAMPOLINE) for i in range(20)])
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    tables = _fde_rows(path)
    assert sorted(tables) == [r.start for r in symbols]
    assert len({tuple((pc - start, o) for pc, o, _ in rows)
                for start, (_, rows) in tables.items()}) == 1


def test_left_out_regions(tmp_path):
    """Overlapped perf-map lines (a dead process's), code GDB's JIT interface registered,
    and addresses inside a mapped file are not in the symbol file."""
    data, symbols = _code(("old", CPYTHON_312_TRAMPOLINE), ("registered", TOY_FRAMELESS),
                          ("kept", CPYTHON_314_TRAMPOLINE))
    newer = Region(JIT + 4, JIT + 12, "perf-map", "newer", sequence=10)
    in_file = Region(LIB + 0x10, LIB + 0x20, "perf-map", "in libfoo", sequence=11)
    registered = [Region(JIT + 64, JIT + 80, "gdb-jit", "toy::jit_entry:<jit>")]
    regions = _map([*symbols, newer, in_file], registered)
    names = [r.name for r in symbol_file_regions(regions)]
    assert names == ["newer", "kept"]


def test_one_section_per_mapping(tmp_path):
    data, symbols = _code(("a", CPYTHON_312_TRAMPOLINE), ("b", CPYTHON_314_TRAMPOLINE))
    far = Region(JIT2 + 0x40, JIT2 + 0x50, "perf-map", "far", sequence=5)
    regions = _map([*symbols, far], extra_mappings=[Mapping(JIT2, JIT2 + 0x1000, "r-xp", "")])
    path = _write(tmp_path, BytesMemory({JIT: data}), regions)
    code = [(s["sh_addr"], s["sh_size"]) for s in _elf(path).iter_sections()
            if s["sh_type"] == "SHT_NOBITS"]
    # Nothing between the two mappings (where libfoo lies) is claimed.
    assert code == [(JIT, 64 + len(CPYTHON_314_TRAMPOLINE)), (JIT2 + 0x40, 0x10)]


class _Process:
    def __init__(self, memory):
        self.memory = memory

    def pid(self):
        return 4242

    def key(self):
        return (1, 4242)


class _Cache:
    def __init__(self, regions):
        self.regions = regions

    def named_regions(self):
        return self.regions


def test_one_file_per_change_in_a_private_directory():
    data, symbols = _code(("a", CPYTHON_312_TRAMPOLINE), ("b", CPYTHON_314_TRAMPOLINE))
    process = _Process(BytesMemory({JIT: data}))
    files = SymbolFiles()
    old, first = files.plan(process, _Cache(_map(symbols)))
    try:
        assert old is None and os.path.exists(first)
        assert stat.S_IMODE(os.stat(os.path.dirname(first)).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
        assert files.covers(symbols[0]) and files.covers(symbols[1])
        # Same named regions at the next stop: nothing to do.
        assert files.plan(process, _Cache(_map(list(symbols)))) == (None, None)
        # One function more: a new file replaces the old one.
        more = [*symbols, Region(JIT + 128, JIT + 140, "perf-map", "c", sequence=2)]
        old, second = files.plan(process, _Cache(_map(more)))
        assert old == first and second != first
        files.delete(old)
        assert not os.path.exists(first)
        # No named region left: unload, nothing new.
        assert files.plan(process, _Cache(_map([]))) == (second, None)
        files.delete(second)
    finally:
        directory = os.path.dirname(first)
        files.cleanup()
    assert not os.path.exists(directory)


def test_no_directory_for_a_new_file_still_unloads_the_old_one(monkeypatch):
    """Nowhere to write the next file (a cleaner removed our directory, and no temporary
    directory takes a new one): the stale file is still handed back for unloading, and
    the next stops with the same regions do not try again."""
    from jit_unwind.symfile import directory
    data, symbols = _code(("a", CPYTHON_312_TRAMPOLINE), ("b", CPYTHON_314_TRAMPOLINE))
    process = _Process(BytesMemory({JIT: data}))
    files = SymbolFiles()
    _, first = files.plan(process, _Cache(_map(symbols[:1])))
    made = os.path.dirname(first)
    directory.remove_directory(made)
    monkeypatch.setattr(directory, "_candidate_roots", lambda: [])
    assert files.plan(process, _Cache(_map(symbols))) == (first, None)
    assert files.loaded is None
    assert files.plan(process, _Cache(_map(list(symbols)))) == (None, None)
    files.cleanup()
    assert not os.path.exists(made)


def test_random_bytes_give_no_impossible_rule(tmp_path):
    """Scrambled JIT code (a corrupted core): whatever the decoder makes of random bytes,
    no rule moves the CFA below sp or saves a register at or above the return address."""
    import random
    rng = random.Random(1)
    functions = [(f"f{i}", bytes(rng.getrandbits(8) for _ in range(60))) for i in range(60)]
    data, symbols = _code(*functions)
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    for _start, (_size, rows) in _fde_rows(path).items():
        for _pc, offset, rules in rows:
            assert 8 <= offset <= (1 << 20) + 8
            assert all(arg < -8 for kind, arg in rules.values() if kind == "OFFSET")


def test_rsp_moved_up_ends_the_rules(tmp_path):
    code = bytes.fromhex("4883c410" "ffd0" "c3")  # add rsp, 16 (above the entry sp)
    data, symbols = _code(("odd", code))
    path = _write(tmp_path, BytesMemory({JIT: data}), _map(symbols))
    size, rows = _fde_rows(path)[JIT]
    assert size == 4 and [(pc - JIT, offset) for pc, offset, _ in rows] == [(0, 8)]


def test_selection_in_bulk_is_the_selection_one_by_one():
    """The bulk path (a clean perf map: every line in a JIT mapping, no overlap) picks
    what the entry-by-entry path picks, and gives way to it on every other map."""
    import random
    from jit_unwind.symfile import build
    rng = random.Random(7)
    extra = [Mapping(JIT2, JIT2 + 0x1000, "r-xp", "")]
    clean = [Region(base + 16 * i, base + 16 * i + 12, "perf-map", f"f{base:x}.{i}", sequence=i)
             for base in (JIT, JIT2) for i in range(40)]
    regions = _map(clean, extra_mappings=extra)
    assert build._select_in_bulk(regions) is not None
    assert build.select(regions) == build._select_one_by_one(regions)
    for _ in range(200):
        symbols = list(clean)
        for _ in range(rng.randrange(4)):
            base = rng.choice((JIT, JIT2, LIB, JIT + 0x2000, JIT2 - 0x100))
            start = base + rng.randrange(0, 0x300)
            symbols.append(Region(start, start + rng.randrange(1, 40), "perf-map", "odd",
                                  sequence=rng.randrange(100)))
        registered = ([Region(JIT + 32, JIT + 48, "gdb-jit", "registered")]
                      if rng.random() < 0.2 else [])
        regions = _map(rng.sample(symbols, len(symbols)), registered, extra)
        if rng.random() < 0.3:  # a runtime's entries are not filtered by the mappings
            start = rng.choice((LIB, JIT2 + 0x2000, JIT - 0x100)) + rng.randrange(0x100)
            regions.add_symbols([Region(start, start + 8, "cpython-jit", "runtime's")])
        assert build.select(regions) == build._select_one_by_one(regions)
    unmapped = RegionMap([], clean)  # a core without its mapping list
    assert build.select(unmapped) == build._select_one_by_one(unmapped)


def test_a_file_without_unwind_rules(tmp_path):
    """GDB's file: the same sections and symbols, no .eh_frame (GDB asks the plugin's
    unwinder first)."""
    data, symbols = _code(("a", CPYTHON_312_TRAMPOLINE), ("b", TOY_TRAMPOLINE))
    process = _Process(BytesMemory({JIT: data}))
    files = SymbolFiles(unwind_rules=False)
    _, path = files.plan(process, _Cache(_map(symbols)))
    try:
        elf = _elf(path)
        assert elf.get_section_by_name(".eh_frame") is None
        assert [(s.name, s["st_value"], s["st_size"]) for s in
                elf.get_section_by_name(".symtab").iter_symbols()][1:] == [
            ("a", JIT, len(CPYTHON_312_TRAMPOLINE)), ("b", JIT + 64, len(TOY_TRAMPOLINE))]
    finally:
        files.cleanup()


def test_one_rule_for_every_function_gives_the_bytes_of_one_fde_each():
    """build_eh_frame's column-wise path (every function has the same rule) writes what
    its FDE-by-FDE path writes: the general path is taken by adding one other rule."""
    import random
    from jit_unwind.symfile.eh_frame import build_eh_frame
    rng = random.Random(7)
    for _ in range(100):
        count = rng.randint(1, 200)
        rule = (rng.getrandbits(16), bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 30))))
        starts = [rng.getrandbits(47) for _ in range(count)]
        same = build_eh_frame(starts, [rule] * count)
        other = build_eh_frame(starts + [JIT], [rule] * count + [(1, b"\x41")])
        assert other.startswith(same[:-4]) and len(other) > len(same)
        assert _eh_frame_fdes(same) == [(start, rule[0]) for start in starts]


def _eh_frame_fdes(section):
    """(pc_begin, pc_range) of each FDE of an .eh_frame written with absolute pointers."""
    import struct
    fdes, offset = [], 0
    while True:
        (length,) = struct.unpack_from("<I", section, offset)
        if length == 0:
            return fdes
        (cie_pointer,) = struct.unpack_from("<I", section, offset + 4)
        if cie_pointer:
            assert cie_pointer == offset + 4  # back to the CIE at offset 0
            fdes.append(struct.unpack_from("<QQ", section, offset + 8))
        offset += 4 + length


class _StopCache:
    """A stop's cache as plan_for_stop reads it; counts the region map's reads."""

    def __init__(self, regions, nothing_to_name=False, may_name=True):
        self._map, self._nothing, self._may_name = regions, nothing_to_name, may_name
        self.reads = 0

    def nothing_to_name(self):
        return self._nothing

    def may_name_jit_code(self):
        return self._may_name

    def regions(self):
        self.reads += 1
        return self._map

    def named_regions(self):
        return self._map


def test_plan_for_stop_plans_once_per_region_map_and_only_when_it_can_name():
    data, symbols = _code(("a", CPYTHON_312_TRAMPOLINE), ("b", CPYTHON_314_TRAMPOLINE))
    process = _Process(BytesMemory({JIT: data}))
    files = SymbolFiles()
    regions = _map(symbols)
    try:
        # Nothing to name (no JIT code, no runtime): not even the mappings are read.
        idle = _StopCache(regions, nothing_to_name=True)
        assert files.plan_for_stop(process, idle, True) == (None, None)
        assert idle.reads == 0
        # No runtime lookups on our account while none names JIT code.
        assert files.plan_for_stop(process, _StopCache(regions, may_name=False),
                                   True) == (None, None)
        assert files.loaded is None
        # That region map was planned for: the next stop with it plans nothing.
        assert files.plan_for_stop(process, _StopCache(regions), True) == (None, None)
        regions = _map(list(symbols))
        old, first = files.plan_for_stop(process, _StopCache(regions), True)
        assert old is None and first == files.loaded
        assert files.plan_for_stop(process, _StopCache(regions), True) == (None, None)
        # The setting off: the file goes, and the next plan starts afresh.
        assert files.plan_for_stop(process, _StopCache(regions), False) == (first, None)
        files.delete(first)
        old, second = files.plan_for_stop(process, _StopCache(regions), True)
        assert old is None and second is not None
        assert files.unload() == second
        files.delete(second)
    finally:
        files.cleanup()
