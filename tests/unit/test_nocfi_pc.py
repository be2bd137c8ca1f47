"""regions/nocfi_pc.py: the code without CFI around one pc and its function symbol give
the same answers as the whole file's computation (regions/nocfi.py) at every pc tried,
on node's executable (V8's builtins: 29 stretches, 2,000 symbols in them), libraries of
the runtimes and the nocfi fixture; and the first ``bt``'s path through RegionMap asks
nothing of the whole file's computation for node."""

import bisect
import os
import random
import shutil

import pytest

from jit_unwind.regions import Mapping, RegionMap, nocfi, nocfi_pc
from tests.support import fixture_binary
from tests.unit.test_nocfi import _pie_mappings

NODE = os.path.realpath(shutil.which("node") or "/usr/bin/node")
LIBRARIES = ["/lib/x86_64-linux-gnu/libcrypto.so.3", "/lib/x86_64-linux-gnu/libstdc++.so.6",
             "/usr/lib/x86_64-linux-gnu/libmozjs-102.so.0"]
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Nothing read from or written to the user's cache of ELF facts."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elf-facts-cache"))
    nocfi_pc._files.clear()
    yield
    nocfi_pc._files.clear()


def _whole_function(symbols, address):
    """nocfi_pc.function_in's pick among the whole file's function symbols."""
    index = bisect.bisect_right(symbols, (address, float("inf"), "")) - 1
    if index >= 0 and symbols[index][0] <= address < symbols[index][1]:
        return symbols[index]
    return None


def _pcs(code, gaps, seed):
    """Each stretch's edges and middle, each symbol's start, and random pcs of each code
    section."""
    pcs = set()
    for low, high in gaps:
        pcs.update((low - 1, low, low + 1, (low + high) // 2, high - 1, high, high + 1))
    choose = random.Random(seed)
    for start, end, _offset in code.code:
        pcs.update((start - 1, start, end - 1, end))
        pcs.update(choose.randrange(start, end) for _ in range(2000))
    return sorted(pcs)


@pytest.mark.parametrize("path", [NODE, str(fixture_binary("nocfi")), *LIBRARIES])
def test_one_pcs_answers_are_the_whole_files(path):
    gaps = nocfi._compute_gaps(path)
    symbols = nocfi._read_function_symbols(path)
    code = nocfi_pc.file_code(path)
    assert code is not None and code.exact and code.complete, path
    assert gaps, f"{path}: no code without CFI to compare at"
    found = 0
    for pc in _pcs(code, gaps, path):
        index = bisect.bisect_right(gaps, (pc, float("inf"))) - 1
        gap = gaps[index] if index >= 0 and pc < gaps[index][1] else None
        assert nocfi_pc.gap_at(path, pc) == gap, (path, hex(pc))
        if gap is not None:
            function = _whole_function(symbols, pc)
            assert nocfi_pc.function_at(path, pc) == function, (path, hex(pc))
            found += function is not None
    if path == NODE:
        assert found > 100  # the builtins are named


def test_a_file_with_other_cfi_answers_covered_pcs_only():
    """libc's separate debug file may hold a .debug_frame: a pc an FDE of .eh_frame
    covers is answered (None), one no FDE covers is the whole computation's (UNKNOWN),
    and RegionMap's answer is the whole file's either way."""
    code = nocfi_pc.file_code(LIBC)
    assert code is not None and code.exact
    if code.complete:  # no separate debug file installed: exact like the others
        return test_one_pcs_answers_are_the_whole_files(LIBC)
    gaps = nocfi._compute_gaps(LIBC)
    bias = 0x7F0000000000
    regions = RegionMap(_pie_mappings(LIBC, bias))
    for pc in _pcs(code, gaps, LIBC):
        index = bisect.bisect_right(gaps, (pc, float("inf"))) - 1
        gap = gaps[index] if index >= 0 and pc < gaps[index][1] else None
        answer = nocfi_pc.gap_at(LIBC, pc)
        assert answer is None or (answer is nocfi_pc.UNKNOWN and gap is not None) or (
            answer is nocfi_pc.UNKNOWN and not _covered(code, pc)), hex(pc)
        region = regions.nocfi_at(pc + bias)
        assert (region.start - bias, region.end - bias) == gap if gap else region is None


def _covered(code, pc):
    with open(code.path, "rb") as handle:
        where = bisect.bisect_right(code.code, (pc, float("inf"))) - 1
        start, end, _offset = code.code[where]
        return code._uncovered(handle, pc, start, end) is None


def test_node_s_first_bt_never_computes_the_whole_file(monkeypatch):
    """Through RegionMap, as a frame asks: a pc of V8's builtins (no CFI) and one of
    node's C++ code (CFI) are answered, the builtin named, without the whole file's
    gaps or symbols (~0.2 s) and with the same region as they give."""
    bias = 0x555555554000
    mappings = _pie_mappings(NODE, bias)
    gaps = nocfi._compute_gaps(NODE)
    symbols = nocfi._read_function_symbols(NODE)
    low, high = max(gaps, key=lambda gap: gap[1] - gap[0])
    builtin = next(s for s in symbols if low <= s[0] < high and s[1] - s[0] > 16)
    covered = next(start for start, end in zip([g[1] for g in gaps], [g[0] for g in gaps[1:]])
                   if end - start > 64) + 32

    def forbidden(path):
        raise AssertionError("the whole file's computation ran")

    monkeypatch.setattr(nocfi, "_compute_gaps", forbidden)
    monkeypatch.setattr(nocfi, "_read_function_symbols", forbidden)
    regions = RegionMap(mappings)
    region = regions.nocfi_at(bias + builtin[0] + 8)
    text = next(m for m in mappings if m.start <= bias + builtin[0] < m.end)
    assert (region.start, region.end) == (max(low + bias, text.start), min(high + bias, text.end))
    function = nocfi_pc.function_in(region, bias + builtin[0] + 8)
    assert (function.start - bias, function.end - bias, function.name) == builtin
    assert function.name.startswith("Builtins_")
    assert regions.nocfi_at(bias + covered) is None
    # V8's second mapping of the builtins: the same code and name at its own bias
    copy = 0x7FFFEF000000
    copied = RegionMap(mappings + [Mapping(copy, copy + text.end - text.start, "r-xp", NODE,
                                           text.offset)])
    pc = copy + (bias + builtin[0] - text.start) + 8
    function = nocfi_pc.function_in(copied.nocfi_at(pc), pc)
    assert (function.name, function.start) == (builtin[2], pc - 8)


def test_words_between_finds_a_word_a_match_across_words_would_hide():
    """The search for st_values goes on from the next word after a match that does not
    start a word: a match across two words must not hide one in the second."""
    # word 0's last five bytes and word 1's first are the pattern's six 0x01 bytes
    words = b"".join(value.to_bytes(8, "big") for value in (
        0x0000000101010101, 0x0101010101010203, 0x0101010101017777, 0x0101010101030000))
    low, high = 0x0101010101010000, 0x0101010101020000
    assert nocfi_pc._words_between(words, low, high) == [1, 2]
    assert nocfi_pc._words_between(words, 0x0101010101017777, 0x0101010101017778) == [2]
    assert nocfi_pc._words_between(words, 5, 5) == []


def test_a_stretchs_functions_are_kept_on_disk(monkeypatch):
    """The function symbols of a stretch are read once, then read back from
    $XDG_CACHE_HOME/jit-unwind/elf-facts by the next session (the same names); a
    damaged entry is read again."""
    gaps = nocfi._compute_gaps(NODE)
    symbols = nocfi._read_function_symbols(NODE)
    low, high = max(gaps, key=lambda gap: gap[1] - gap[0])
    pcs = [start + 1 for start, end, _name in symbols if low <= start < high][::97]
    read = []
    original = nocfi_pc.FileCode._read_functions

    def counted(self, *stretch):
        read.append(stretch)
        return original(self, *stretch)

    monkeypatch.setattr(nocfi_pc.FileCode, "_read_functions", counted)

    def session():
        nocfi_pc._files.clear()
        return [nocfi_pc.function_at(NODE, pc) for pc in pcs]

    first = session()
    assert read == [(low, high)] and len(pcs) > 10
    assert first == [_whole_function(symbols, pc) for pc in pcs]
    assert session() == first and read == [(low, high)]
    cache = os.path.join(os.environ["XDG_CACHE_HOME"], "jit-unwind", "elf-facts")
    entry, = [name for name in os.listdir(cache) if "-nocfi-pc-functions-" in name]
    with open(os.path.join(cache, entry), "wb") as handle:
        handle.write(b"\x00garbage")
    assert session() == first and len(read) == 2


def test_padding_is_told_from_its_first_bytes_as_from_all_of_them():
    """_only_padding stops reading where the padding's nops stop early in the first
    4 KB: the same answer as the whole stretch's test, for stretches of nops, int3 and
    zeros longer than that, clean or with one byte of code anywhere."""
    import io
    nops = [b"\x90", b"\xcc", b"\x00", b"\x66\x90", b"\x0f\x1f\x00", b"\x0f\x1f\x40\x00",
            b"\x0f\x1f\x44\x00\x00", b"\x66\x0f\x1f\x44\x00\x00", b"\x0f\x1f\x80\x00\x00\x00\x00",
            b"\x0f\x1f\x84\x00\x00\x00\x00\x00", b"\x2e\x0f\x1f\x84\x00\x00\x00\x00\x00"]
    choose = random.Random(5)
    answers = set()
    for trial in range(300):
        stretch = bytearray()
        while len(stretch) < choose.choice((100, 4090, 4100, 9000)):
            stretch += choose.choice(nops)
        if trial % 3:
            stretch[choose.randrange(len(stretch))] = choose.choice((0x55, 0x48, 0xC3, 0x0F))
        expected = nocfi.PADDING.fullmatch(bytes(stretch)) is not None
        handle = io.BytesIO(b"head" + bytes(stretch))
        assert nocfi_pc._only_padding(handle, 4, len(stretch)) == expected, trial
        answers.add(expected)
    assert answers == {True, False}
    assert nocfi_pc._only_padding(io.BytesIO(b"\x90" * 10), 0, 20) is None  # cut short
