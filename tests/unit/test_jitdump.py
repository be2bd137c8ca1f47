"""regions/jitdump.py, regions/stdio_tail.py, regions/jitdump_process.py and the
jitdump-cfi strategy, on dumps that CPython's ``-X perf_jit`` really wrote (recorded
into the test's temp directory, then read as bytes) and on cut and garbage copies."""

import os
import random
import struct
import subprocess

import pytest

from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.jitdump import (CodeLoad, candidate_paths, find_jitdump, parse_jitdump,
                                        set_user_path, with_pending)
from jit_unwind.regions.jitdump_process import (_current_file, latest_loads,
                                                process_start_time, verified)
from jit_unwind.regions.stdio_tail import pending_writes
from jit_unwind.target import BytesMemory
from jit_unwind.unwind import unwind_jit_frame
from jit_unwind.unwind.context import UnwindContext
from jit_unwind.unwind.jitdump_cfi import fde_entries
from tests.python_expect import python_of

SCRIPT = """
import os
def traced():
    return os.getpid()
print(traced())
"""
EM_X86_64 = 62


@pytest.fixture(scope="module", params=["3.13.0", "3.14.6", "3.15.0rc2"])
def recorded(request, tmp_path_factory):
    """(bytes of the dump, pid) CPython ``version`` wrote running SCRIPT."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONHOME", "PYTHONPATH")}
    result = subprocess.run([str(python_of(request.param)), "-X", "perf_jit", "-c", SCRIPT],
                            capture_output=True, text=True, errors="replace", timeout=60, env=env,
                            cwd=tmp_path_factory.mktemp("cwd"))
    pid = int(result.stdout.split()[-1])
    path = f"/tmp/jit-{pid}.dump"
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    finally:
        os.unlink(path)
    saved = tmp_path_factory.mktemp("dump") / f"jit-{pid}.dump"
    saved.write_bytes(data)
    return data, pid, saved, request.param


def _traced(dump) -> CodeLoad:
    loads = [load for load in dump.loads if load.name == "py::traced:<string>"]
    assert len(loads) == 1, [load.name for load in dump.loads][-5:]
    return loads[0]


def test_the_writer_s_records_are_read(recorded):
    data, pid, _path, _version = recorded
    dump = parse_jitdump(data)
    assert dump.pid == pid and dump.little_endian and not dump.truncated
    assert dump.machine in (EM_X86_64, 0)  # 3.13.0 leaves e_machine 0
    load = _traced(dump)
    assert load.pid == pid and load.code_size == len(load.code) > 0
    # Every trampoline is the same code, each at its own address; 3.15 puts a marker
    # over the last 8 bytes of the copy in the dump (its trampoline is 8 bytes long).
    assert dump.loads[0].marked == (recorded[3] == "3.15.0rc2")
    prefix = -8 if dump.loads[0].marked else None
    assert len({bytes(load.code[:prefix]) for load in dump.loads}) == 1
    assert len({load.code_addr for load in dump.loads}) == len(dump.loads)
    assert load.unwinding is not None and load.unwinding.eh_frame_hdr[:1] == b"\x01"


def test_the_eh_frame_covers_the_code_where_the_writer_placed_it(recorded):
    load = _traced(parse_jitdump(recorded[0]))
    entries = fde_entries(load.unwinding.eh_frame, load.eh_frame_address)
    assert [(start, end) for start, end, _fde in entries] == [(load.start, load.end)]
    rows = entries[0][2]
    # At entry: CFA = rsp + 8, return address at CFA - 8 (the call just pushed it).
    assert rows[0]["pc"] == load.start
    assert (rows[0]["cfa"].reg, rows[0]["cfa"].offset) == (7, 8)
    assert rows[0][16].type == "OFFSET" and rows[0][16].arg == -8


def test_a_cut_file_gives_the_records_before_the_cut(recorded):
    data = recorded[0]
    whole = parse_jitdump(data)
    for cut in sorted(set(random.Random(1).sample(range(len(data)), 300)) | {0, 39, 40, 41}):
        dump = parse_jitdump(data[:cut])
        if cut < 40:
            assert dump is None
            continue
        assert [load.code_addr for load in dump.loads] == \
            [load.code_addr for load in whole.loads[:len(dump.loads)]]
        assert dump.truncated == (cut != dump.complete_end)


def test_garbage_never_raises(recorded):
    data = recorded[0]
    generator = random.Random(2)
    for _ in range(300):
        garbage = bytearray(data[:generator.randrange(40, 4000)])
        for _flip in range(generator.randrange(1, 20)):
            garbage[generator.randrange(len(garbage))] = generator.randrange(256)
        parse_jitdump(bytes(garbage))  # any result, never an exception
    assert parse_jitdump(b"\0" * 100) is None
    assert parse_jitdump(b"jitd" + os.urandom(5000)) is None
    huge = data[:40] + struct.pack("<IIQ", 0, 0xFFFFFFF0, 0)
    assert parse_jitdump(huge).truncated


def test_a_big_endian_writer_is_read():
    name, code = b"f\0", b"\x90\xc3"
    body = struct.pack(">IIQQQQ", 7, 7, 0x1000, 0x1000, len(code), 1) + name + code
    data = (struct.pack(">IIIIIIQQ", 0x4A695444, 1, 40, 43, 0, 7, 0, 0)
            + struct.pack(">IIQ", 0, 16 + len(body), 0) + body)
    dump = parse_jitdump(data)
    assert not dump.little_endian and dump.pid == 7
    assert [(load.name, load.code_addr, load.code) for load in dump.loads] == [("f", 0x1000, code)]


def test_the_unflushed_tail_is_added_only_when_it_continues_the_file(recorded):
    data = recorded[0]
    whole = parse_jitdump(data)
    cut = len(data) - 1000  # mid-record, as a stdio buffer flush leaves the file
    file_part, tail = data[:cut], data[cut:]
    shorter = parse_jitdump(file_part)
    assert len(shorter.loads) < len(whole.loads)
    other_stream = b"Python output that is no jitdump record\n" * 10
    joined = with_pending(file_part, [other_stream, tail])
    assert [load.code_addr for load in joined.loads] == [load.code_addr for load in whole.loads]
    assert len(with_pending(file_part, [other_stream]).loads) == len(shorter.loads)


def test_pending_writes_follow_glibc_s_stream_list():
    head, first, second, buffer = 0x1000, 0x2000, 0x3000, 0x4000
    pending = b"not yet written"

    def stream(write_base, write_ptr, chain):
        raw = bytearray(0x70)
        struct.pack_into("<QQ", raw, 0x20, write_base, write_ptr)
        struct.pack_into("<Q", raw, 0x68, chain)
        return bytes(raw)

    memory = BytesMemory({head: struct.pack("<Q", first),
                          first: stream(0, 0, second),  # nothing pending
                          second: stream(buffer, buffer + len(pending), second),  # a loop
                          buffer: pending})
    assert pending_writes(memory, head) == [pending]
    assert pending_writes(BytesMemory({}), head) == []


def test_the_latest_record_wins_and_code_not_in_memory_is_dropped(recorded):
    dump = parse_jitdump(recorded[0])
    load = _traced(dump)
    again = CodeLoad("py::again", load.code_addr, load.code_size, load.code,
                     999, load.pid, load.vma, sequence=len(dump.loads))
    latest = latest_loads(dump.loads + [again])
    assert [item.name for item in latest if item.code_addr == load.code_addr] == ["py::again"]
    other = next(item for item in dump.loads if item.code_addr != load.code_addr)
    if load.marked:  # nothing but a marker to compare: trusted as it is
        assert verified([load], BytesMemory({}), []) == [load]
        return
    memory = BytesMemory({load.code_addr: load.code,  # still there
                          other.code_addr: b"\xcc" * other.code_size})  # reused
    mapping = Mapping(min(load.code_addr, other.code_addr),
                      max(load.end, other.end), "r-xp")
    kept = verified([load, other], memory, [mapping])
    assert kept == [load]
    assert verified([load, other], memory, []) == [load]  # record by record


def test_jitdump_cfi_unwinds_a_trampoline_at_its_call(recorded):
    dump = parse_jitdump(recorded[0])
    load = _traced(dump)
    # The trampoline's body: the row after its prologue's first instruction, the one in
    # force at its call; the frame it called returns right after it.
    row = entries_rows(load)[1]
    return_address = row["pc"] + 1
    caller_pc = 0x555555560000
    sp = 0x7ffd0000
    base = {7: sp, 6: sp + 0x40}[row["cfa"].reg]
    cfa = base + row["cfa"].offset
    stack = bytearray(0x100)
    struct.pack_into("<Q", stack, cfa - 8 - sp, caller_pc)
    if 6 in row:  # 3.14+: push rbp
        struct.pack_into("<Q", stack, cfa - 16 - sp, 0x7ffd9000)
    memory = BytesMemory({sp: bytes(stack), load.code_addr: load.code})
    mappings = [Mapping(load.code_addr & ~0xFFF, (load.end + 0xFFF) & ~0xFFF, "rwxp"),
                Mapping(0x555555554000, 0x555555600000, "r-xp", "/usr/bin/python"),
                Mapping(sp, sp + 0x100, "rw-p", "[stack]")]
    regions = RegionMap(mappings)
    regions.add_unwind_records([load])
    registers = {"rsp": sp, "rbp": sp + 0x40, "rbx": 3}
    ctx = UnwindContext(return_address, sp, memory, regions, registers.get)
    result = unwind_jit_frame(ctx)
    assert result.method == "jitdump-cfi"
    assert (result.caller_pc, result.caller_sp) == (caller_pc, cfa)
    assert result.frame_start == load.code_addr
    assert result.saved["rbx"] == 3
    assert result.saved["rbp"] == (0x7ffd9000 if 6 in row else sp + 0x40)


def entries_rows(load):
    entries = fde_entries(load.unwinding.eh_frame, load.eh_frame_address)
    return entries[0][2]


def test_the_dump_is_found_by_pid_mapping_and_user_path(recorded, tmp_path):
    data, pid, saved, _version = recorded
    path, dump = find_jitdump(pid, [str(saved)])
    assert path == str(saved) and dump.pid == pid
    # Another process, with no dump in /tmp (a test running beside this one may have
    # written one for the pid right after the recorded process's).
    other = next(p for p in range(pid + 1, pid + 10_000)
                 if not os.path.exists(f"/tmp/jit-{p}.dump"))
    assert find_jitdump(other, [str(saved)]) == (None, None)  # another process's name
    wrong_pid = tmp_path / f"jit-{other}.dump"
    wrong_pid.write_bytes(data)
    assert find_jitdump(other, [str(wrong_pid)]) == (None, None)  # its header says pid
    elsewhere = tmp_path / "renamed.dump"
    elsewhere.write_bytes(data)
    set_user_path(str(elsewhere))
    try:
        assert find_jitdump(pid)[0] == str(elsewhere)
    finally:
        set_user_path(None)
    assert find_jitdump(pid, [], cwd=str(saved.parent))[0] == str(saved)


def test_a_live_process_s_dump_is_not_one_a_dead_process_left(recorded, tmp_path):
    """A file with the live process's pid, written before it started, is another
    process's (pids are reused); one the process maps is its own whatever its age."""
    data = bytearray(recorded[0])
    pid = os.getpid()
    struct.pack_into("<I", data, 20, pid)  # the header's pid
    stale = tmp_path / f"jit-{pid}.dump"
    stale.write_bytes(bytes(data))
    hour_ago = process_start_time(pid) - 3600
    os.utime(stale, (hour_ago, hour_ago))
    assert find_jitdump(pid, [], str(tmp_path), _current_file(pid, []))[0] is None
    assert find_jitdump(pid, [str(stale)], None,
                        _current_file(pid, [str(stale)]))[0] == str(stale)
    os.utime(stale)  # written now: this process's
    assert find_jitdump(pid, [], str(tmp_path), _current_file(pid, []))[0] == str(stale)


def _record(kind, body):
    return struct.pack("<IIQ", kind, 16 + len(body), 0) + body


def test_debug_info_gives_the_next_load_its_lines():
    header = struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, 9, 0, 0)
    code = b"\x55\x48\x89\xe5\x5d\xc3"
    lines = (struct.pack("<QQ", 0x5000, 2)
             + struct.pack("<QII", 0x5000, 10, 0) + b"app.js\0"
             + struct.pack("<QII", 0x5004, 11, 0) + b"app.js\0")
    load = struct.pack("<IIQQQQ", 9, 9, 0x5000, 0x5000, len(code), 1) + b"f\0" + code
    dump = parse_jitdump(header + _record(2, lines) + _record(0, load))
    assert dump.loads[0].lines == [(0x5000, 10, "app.js"), (0x5004, 11, "app.js")]
    # A count the record cannot hold, cut entries: what fits, never an exception.
    lying = struct.pack("<QQ", 0x5000, 1 << 40) + struct.pack("<QII", 0x5000, 3, 0) + b"a"
    dump = parse_jitdump(header + _record(2, lying) + _record(0, load))
    assert dump.loads[0].lines == []


class _Process:
    """What process_jitdump asks of a debugger.Process."""

    memory = BytesMemory({})

    def __init__(self, pid):
        self._pid = pid

    def pid(self):
        return self._pid


def test_a_process_without_a_dump_anywhere_is_asked_nothing_more(tmp_path, monkeypatch):
    """No file at any of the places a dump may be (most JIT processes): the search ends
    there, without the process's start time from /proc; a dump the process maps is
    found."""
    import jit_unwind.regions.jitdump_process as jitdump_process
    pid = next(p for p in range(os.getpid() + 1, os.getpid() + 10_000)
               if not any(os.path.exists(path) for path in candidate_paths(p)))
    monkeypatch.setattr(jitdump_process, "process_start_time",
                        lambda _pid: pytest.fail("the start time was read for no dump"))
    dump = jitdump_process.process_jitdump(_Process(pid), [], "native", lambda name: None)
    assert (dump.path, dump.loads) == (None, [])
    monkeypatch.undo()
    mapped = tmp_path / f"jit-{pid}.dump"
    mapped.write_bytes(struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, EM_X86_64, 0, pid, 0, 0))
    dump = jitdump_process.process_jitdump(
        _Process(pid), [Mapping(0x1000, 0x2000, "r--p", str(mapped))], "native",
        lambda name: None)
    assert dump.path == str(mapped)
