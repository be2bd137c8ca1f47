"""Read perf jitdump files (``jit-PID.dump``): the JIT's own record of its code.

Written by CPython's ``-X perf_jit`` (3.13+), V8's ``--perf-prof``, Java agents; format
in Linux's tools/perf/Documentation/jitdump-specification.txt.  A file header (magic
"JiTD" in the writer's byte order, version, e_machine, pid) and records, each
``id, total_size, timestamp`` then a payload:

- JIT_CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index, a NUL-terminated name,
  then the code bytes;
- JIT_CODE_MOVE: the code of ``code_index`` now lives at ``new_code_addr``;
- JIT_CODE_DEBUG_INFO: source lines of the code of the next JIT_CODE_LOAD at the
  same address (kept on the record; not shown yet);
- JIT_CODE_UNWINDING_INFO: ``.eh_frame`` then ``.eh_frame_hdr`` bytes for the code of the
  next JIT_CODE_LOAD (the order perf's genelf.c reads them in, whatever the
  specification's prose says); the writer lays the ``.eh_frame`` out right after the
  code, at ``code_addr + align8(code_size)``, and its pc-relative pointers count from
  there;
- JIT_CODE_CLOSE: the end.

A file still being written is normal: a truncated last record is ignored, and nothing
here raises on a truncated or garbage file.
"""

import os
import struct
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from ..file_cache import FileCache
from .jitdump_paths import (candidate_paths, dump_name, may_have_jitdump,  # noqa: F401
                            set_user_path, user_path)

MAGIC = 0x4A695444  # "JiTD" as the writer's uint32
FILE_HEADER = 40
RECORD_HEADER = 16
JIT_CODE_LOAD, JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO, JIT_CODE_CLOSE = 0, 1, 2, 3
JIT_CODE_UNWINDING_INFO = 4
MAX_NAME = 4096
# Bounds for a garbage file: a real dump is far smaller than either.
MAX_FILE_SIZE = 512 << 20
MAX_RECORDS = 4_000_000
MAX_RECORD = 64 << 20


@dataclass
class UnwindingInfo:
    """The ``.eh_frame`` (and its header) a writer gave for one piece of code."""

    eh_frame: bytes
    eh_frame_hdr: bytes
    mapped_size: int


@dataclass
class CodeLoad:
    """One JIT_CODE_LOAD record (moved by later JIT_CODE_MOVE records)."""

    name: str
    code_addr: int
    code_size: int
    code: bytes
    code_index: int
    pid: int
    vma: int
    # Position in the file: where code is freed and reused, the later record describes
    # what is there now.
    sequence: int = 0
    unwinding: Optional[UnwindingInfo] = field(default=None, repr=False)
    # The writer put a marker over the last 8 bytes of the code (CPython 3.15+).
    marked: bool = False
    # (address, line, file name) from a JIT_CODE_DEBUG_INFO record.
    lines: List[Tuple[int, int, str]] = field(default_factory=list, repr=False)

    @property
    def start(self) -> int:
        return self.code_addr

    @property
    def end(self) -> int:
        return self.code_addr + self.code_size

    @property
    def eh_frame_address(self) -> int:
        """Where the writer says the ``.eh_frame`` lies (perf's layout): right after
        the code, 8-aligned; its pc-relative pointers count from there."""
        return self.code_addr + ((self.code_size + 7) & ~7)


@dataclass
class Jitdump:
    """A parsed jitdump file."""

    pid: int
    machine: int
    version: int
    little_endian: bool
    loads: List[CodeLoad]
    closed: bool = False
    truncated: bool = False  # the last record was cut short (still being written)
    complete_end: int = 0  # offset just past the last whole record
    size: int = 0  # bytes parsed


def parse_header(data: bytes) -> Optional[Tuple[str, int, int, int, int]]:
    """(byte order, version, header size, e_machine, pid), None when ``data`` does not
    start with a jitdump header."""
    if len(data) < FILE_HEADER:
        return None
    for order in ("<", ">"):
        magic, version, size, machine, _pad, pid = struct.unpack_from(order + "6I", data)
        if magic == MAGIC:
            return order, version, size, machine, pid
    return None


def parse_jitdump(data: bytes) -> Optional[Jitdump]:
    """The records of a jitdump file's bytes; None when it is not one."""
    header = parse_header(data)
    if header is None:
        return None
    order, version, header_size, machine, pid = header
    dump = Jitdump(pid, machine, version, order == "<", [], size=len(data))
    by_index: Dict[int, CodeLoad] = {}
    pending_unwind: Optional[UnwindingInfo] = None
    pending_lines: Tuple[int, List[Tuple[int, int, str]]] = (0, [])
    offset = max(header_size, FILE_HEADER) if header_size <= len(data) else FILE_HEADER
    for _ in range(MAX_RECORDS):
        if offset + RECORD_HEADER > len(data):
            dump.truncated = offset != len(data)
            break
        kind, size, _timestamp = struct.unpack_from(order + "IIQ", data, offset)
        if size < RECORD_HEADER or offset + size > len(data):
            dump.truncated = True  # cut short while being written, or garbage
            break
        body = data[offset + RECORD_HEADER:offset + size]
        if kind == JIT_CODE_LOAD:
            load = _code_load(order, body, len(dump.loads))
            if load is not None:
                load.unwinding, pending_unwind = pending_unwind, None
                if pending_lines[0] == load.code_addr:
                    load.lines = pending_lines[1]
                pending_lines = (0, [])
                dump.loads.append(load)
                by_index[load.code_index] = load
        elif kind == JIT_CODE_MOVE:
            _move(order, body, by_index, dump.loads)
        elif kind == JIT_CODE_DEBUG_INFO:
            pending_lines = _debug_info(order, body)
        elif kind == JIT_CODE_UNWINDING_INFO:
            pending_unwind = _unwinding_info(order, body)
        elif kind == JIT_CODE_CLOSE:
            dump.closed = True
            offset += size
            break
        offset += size
    dump.complete_end = offset  # the first record the loop could not read, if any
    if _marks_code(dump.loads, order):
        for load in dump.loads:
            load.marked = True
    return dump


def _marks_code(loads: List[CodeLoad], order: str) -> bool:
    """Whether the writer replaced the last 8 code bytes of each record by a marker
    (CPython 3.15: ``salt ^ code_index << 32 ^ code_size``, so that perf sees distinct
    code): true when one salt explains most records."""
    salts: Dict[int, int] = {}
    sized = [load for load in loads[:64] if load.code_size >= 8]
    for load in sized:
        (last,) = struct.unpack(order + "Q", load.code[-8:])
        salt = last ^ (load.code_index << 32) ^ load.code_size
        salts[salt] = salts.get(salt, 0) + 1
    return len(sized) >= 2 and max(salts.values()) * 2 > len(sized)


def continues(data: bytes, tail: bytes, dump: Jitdump) -> bool:
    """Whether ``tail`` (a stream's unflushed bytes) continues the file ``data``: from
    the file's last whole record on, ``data + tail`` holds only well-formed records of
    this writer, at least one of them ending inside ``tail``."""
    order = "<" if dump.little_endian else ">"
    offset = dump.complete_end
    if dump.closed or offset < FILE_HEADER:
        return False
    window = data[offset:] + tail
    position = 0
    grew = False
    for _ in range(MAX_RECORDS):
        if position + RECORD_HEADER > len(window):
            break
        kind, size, _timestamp = struct.unpack_from(order + "IIQ", window, position)
        if kind > JIT_CODE_UNWINDING_INFO or size < RECORD_HEADER or size > MAX_RECORD:
            return False
        if position + size > len(window):
            break  # the writer stopped inside this record
        if kind == JIT_CODE_LOAD:
            if size < RECORD_HEADER + 40:
                return False
            (pid,) = struct.unpack_from(order + "I", window, position + RECORD_HEADER)
            if pid != dump.pid:
                return False
        position += size
        grew = grew or offset + position > len(data)
    return grew


def with_pending(data: bytes, tails: Iterable[bytes], dump: Optional[Jitdump] = None
                 ) -> Optional[Jitdump]:
    """The file's records (``dump``, when already parsed from ``data``), with those
    still in the writer's stdio buffer (one of ``tails``) after them when one continues
    the file; None when ``data`` is no jitdump."""
    if dump is None:
        dump = parse_jitdump(data)
    if dump is None:
        return None
    for tail in tails:
        if continues(data, tail, dump):
            return parse_jitdump(data + tail) or dump
    return dump


def _code_load(order: str, body: bytes, sequence: int) -> Optional[CodeLoad]:
    if len(body) < 40:
        return None
    pid, _tid, vma, code_addr, code_size, code_index = struct.unpack_from(order + "IIQQQQ", body)
    end_of_name = body.find(b"\0", 40, 40 + MAX_NAME)
    if end_of_name < 0:
        return None
    code_start = end_of_name + 1
    if code_size > len(body) - code_start:
        return None  # a code size the record cannot hold: garbage
    name = body[40:end_of_name].decode("utf-8", "replace")
    return CodeLoad(name, code_addr, code_size, body[code_start:code_start + code_size],
                    code_index, pid, vma, sequence)


def _move(order: str, body: bytes, by_index: Dict[int, CodeLoad], loads: List[CodeLoad]):
    if len(body) < 48:
        return
    _pid, _tid, _vma, old_addr, new_addr, code_size, code_index = struct.unpack_from(
        order + "IIQQQQQ", body)
    load = by_index.get(code_index)
    if load is None or load.code_addr != old_addr:
        return
    # A new entry (later in sequence): the old address may hold other code by now.
    moved = CodeLoad(load.name, new_addr, code_size, load.code, code_index, load.pid,
                     new_addr, len(loads), load.unwinding, load.marked)
    loads.append(moved)
    by_index[code_index] = moved


def _debug_info(order: str, body: bytes) -> Tuple[int, List[Tuple[int, int, str]]]:
    """(code address, [(address, line, file)]) of a JIT_CODE_DEBUG_INFO record; the
    entries that fit in the record (a count beyond them is garbage)."""
    if len(body) < 16:
        return 0, []
    code_addr, count = struct.unpack_from(order + "QQ", body)
    entries: List[Tuple[int, int, str]] = []
    offset = 16
    for _ in range(min(count, len(body) // 17)):
        if offset + 16 >= len(body):
            break
        address, line, _discriminator = struct.unpack_from(order + "QII", body, offset)
        end = body.find(b"\0", offset + 16, offset + 16 + MAX_NAME)
        if end < 0:
            break
        entries.append((address, line, body[offset + 16:end].decode("utf-8", "replace")))
        offset = end + 1
    return code_addr, entries


def _unwinding_info(order: str, body: bytes) -> Optional[UnwindingInfo]:
    if len(body) < 24:
        return None
    data_size, hdr_size, mapped_size = struct.unpack_from(order + "QQQ", body)
    if data_size > len(body) - 24 or hdr_size > data_size:
        return None
    data = body[24:24 + data_size]
    frame_size = data_size - hdr_size
    return UnwindingInfo(data[:frame_size], data[frame_size:], mapped_size)


# -- finding and caching files ---------------------------------------------------------

def working_directory(process, kind: str) -> Optional[str]:
    """The live process's working directory (V8 writes its dump there); None for a core."""
    if kind != "native":
        return None
    try:
        return os.readlink(f"/proc/{process.pid()}/cwd")
    except OSError:
        return None


def file_exists(pid: int, mapped_paths: Iterable[str], cwd: Optional[str]) -> bool:
    """Whether a file is at any of :func:`candidate_paths`: most JIT processes write no
    dump, and those are spared its reader (jitdump_process, ~0.3 ms of the first bt)."""
    return any(os.path.exists(path) for path in candidate_paths(pid, mapped_paths, cwd))


# Parsed files, kept while the file stays the same: a dump only grows.
_cache: FileCache[Optional[Jitdump]] = FileCache()


def read_jitdump(path: str) -> Optional[Jitdump]:
    """The parsed file at ``path``; None when it is missing, too large or not a
    jitdump (garbage never gets through to the debugger)."""
    return _cache.get(path, _parse_file, None)


def _parse_file(path: str) -> Optional[Jitdump]:
    if not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE_SIZE:
        return None
    with open(path, "rb") as handle:
        return parse_jitdump(handle.read(MAX_FILE_SIZE))


def find_jitdump(pid: int, mapped_paths: Iterable[str] = (), cwd: Optional[str] = None,
                 accept: Callable[[str], bool] = lambda path: True
                 ) -> Tuple[Optional[str], Optional[Jitdump]]:
    """(path, parsed file) of the jitdump written by process ``pid``: the first
    candidate whose header names that pid and that ``accept`` takes; (None, None) when
    there is none."""
    for path in candidate_paths(pid, mapped_paths, cwd):
        dump = read_jitdump(path)
        if dump is not None and dump.pid == pid and accept(path):
            return path, dump
    return None, None


COMPARED_BYTES = 256


def comparable_length(load: CodeLoad) -> int:
    """How many bytes from the start of a record's code to compare with memory: not the
    last 8 where the writer put a marker there (see :func:`_marks_code`)."""
    size = len(load.code) - 8 if load.marked else len(load.code)
    return min(max(size, 0), COMPARED_BYTES)
