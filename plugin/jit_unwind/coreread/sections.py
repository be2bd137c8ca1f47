"""A file's DWARF sections as the reader needs them, read with struct: each section's
bytes read (and inflated) when first used, the ones no backtrace needs never, and
``.debug_aranges``.  pyelftools (its import alone is ~30 ms) is left for what the quick
reader does not understand (``pyelftools_dwarf``).

A section read in parts lives in an anonymous mapping of its size: only the pages of the
parts read are ever touched (a bytearray of CPython's 16 MB .debug_info was ~8 ms of
zeroing).  A compressed one with no inflated copy on disk is inflated only as far as the
parts asked for (``_Inflating``): glibc's units a backtrace needs are in the first
tenth of its 6 MB .debug_info.  What was inflated is kept on disk at exit
(``section_cache``): the next run reads those parts back and inflates only for others."""

from __future__ import annotations  # annotations unevaluated: no compile of string ones

import mmap
import struct
import zlib
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ..elf.rawelf import RawElf

if TYPE_CHECKING:
    from typing import BinaryIO, Set, Union

    Buffer = Union[mmap.mmap, bytearray]  # what _zeroed makes

SHT_NOBITS = 8
SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB = 1
_CHDR = struct.Struct("<IIQQ")  # Elf64_Chdr: type, reserved, size, alignment


_PAIR = struct.Struct("<QQ")


def read_aranges(data: bytes) -> List[Tuple[int, int, int]]:
    """(start, end, unit offset) of each range of ``.debug_aranges`` (32-bit DWARF,
    8-byte addresses; other sets are left out), sorted."""
    found = []
    at = 0
    while at + 12 <= len(data):
        length = int.from_bytes(data[at:at + 4], "little")
        if length == 0xFFFFFFFF:
            break  # 64-bit DWARF: the units are found without this table
        end = min(at + 4 + length, len(data))
        unit = int.from_bytes(data[at + 6:at + 10], "little")
        address_size = data[at + 10]
        position = at + 12
        position += (-position) % 16  # tuples are aligned to twice the address size
        if address_size == 8 and position < end:
            tuples = data[position:end - (end - position) % 16]
            for start, size in _PAIR.iter_unpack(tuples):
                if start == 0 and size == 0:
                    break
                found.append((start, start + size, unit))
        at = at + 4 + length
    return sorted(found)


class DebugSection:
    """One section as ``section_cache`` reads it: its name, offset, size once inflated,
    and its bytes (inflated when SHF_COMPRESSED says so)."""

    def __init__(self, handle, name: str, header):
        self._handle = handle
        self.name = name
        self._header = header
        self.compressed = bool(header["sh_flags"] & SHF_COMPRESSED)
        self.data_size = header["sh_size"]
        self._kind = ELFCOMPRESS_ZLIB
        if self.compressed:
            handle.seek(header["sh_offset"])
            chunk = handle.read(_CHDR.size)
            if len(chunk) < _CHDR.size:
                raise ValueError(f"{name}: compression header cut short")
            self._kind, _reserved, self.data_size, _align = _CHDR.unpack(chunk)

    def __getitem__(self, key):
        return self._header[key]

    def data(self) -> bytes:
        header = self._header
        if header["sh_type"] == SHT_NOBITS:
            return bytes(self.data_size)
        self._handle.seek(header["sh_offset"])
        raw = self._handle.read(header["sh_size"])
        if not self.compressed:
            return raw
        if self._kind != ELFCOMPRESS_ZLIB:
            raise ValueError(f"{self.name}: compression type {self._kind}")
        try:
            data = zlib.decompressobj().decompress(raw[_CHDR.size:], self.data_size)
        except zlib.error as error:  # the readers' ValueError for bytes they cannot read
            raise ValueError(f"{self.name}: {error}") from None
        if len(data) != self.data_size:
            raise ValueError(f"{self.name}: inflated to {len(data)} bytes, not "
                             f"{self.data_size}")
        return data


class _Inflating:
    """A compressed section inflated from its start only as far as asked for, into
    ``buffer`` (the section's size); ``kept``: (open file, length) of the section's
    first bytes inflated by an earlier run (``section_cache``), read from there as
    far as they go."""

    CHUNK = 1 << 16  # compressed bytes read at a time

    def __init__(self, handle, header, size: int, kept=None):
        self._handle = handle
        self._next = header["sh_offset"] + _CHDR.size  # the compressed bytes not read yet
        self._end = header["sh_offset"] + header["sh_size"]
        self._inflater = zlib.decompressobj()
        self._pending = b""  # read, not inflated yet
        self._kept = kept
        self.buffer = _zeroed(size)
        self.size = size
        self.filled = 0  # the buffer's bytes ready
        self._inflated = 0  # of which the inflater gave

    def through(self, end: int) -> None:
        """Make the first ``end`` bytes ready: from the earlier run's copy as far as it
        goes, past it inflated (from the section's start: the inflater cannot begin
        in the middle).  A section cut short reads as zeros past its end."""
        end = min(end, self.size)
        if self.filled >= end:
            return
        if self._kept is not None and end <= self._kept[1]:
            handle, _length = self._kept
            try:
                handle.seek(self.filled)
                got = handle.readinto(memoryview(self.buffer)[self.filled:end])
            except (OSError, ValueError):
                got = 0
            if got == end - self.filled:
                self.filled = end
                return
            self._kept = None  # changed under us: inflate instead
        while self._inflated < end:
            if not self._pending:
                if self._next >= self._end:
                    break
                self._handle.seek(self._next)
                self._pending = self._handle.read(min(self.CHUNK, self._end - self._next))
                if not self._pending:
                    break
                self._next += len(self._pending)
            given = self._pending
            try:
                out = self._inflater.decompress(given, max(end - self._inflated, self.CHUNK))
            except zlib.error as error:  # the readers' ValueError for bytes they cannot read
                raise ValueError(f"a compressed section: {error}") from None
            self._pending = self._inflater.unconsumed_tail
            if not out and len(self._pending) == len(given):
                break  # no progress: a stream zlib neither inflates nor rejects
            out = out[:self.size - self._inflated]
            self.buffer[self._inflated:self._inflated + len(out)] = out
            self._inflated += len(out)
            if self._inflater.eof:
                self._next = self._end
                self._pending = b""
        self.filled = max(self.filled, self._inflated)

    @property
    def whole(self) -> bool:
        return self.filled >= self.size


def _zeroed(size: int):
    """A writable buffer of ``size`` zero bytes whose pages are touched only when used."""
    return mmap.mmap(-1, size) if size else bytearray()


_partly_inflated: List[Tuple[str, "DebugSection", _Inflating]] = []  # kept at exit


def _keep_inflated() -> None:
    """At exit: as much of each compressed section as was inflated, kept on disk
    (``section_cache``) when the cache is on, for the next run to read its parts from
    (inflating the rest here would cost a first run ~30 ms of glibc's .debug_info)."""
    from .section_cache import keep_inflated
    for path, section, inflating in _partly_inflated:
        keep_inflated(path, section, inflating.buffer, inflating.filled)
    _partly_inflated.clear()


class DebugSections:
    """The ``.debug_*`` sections of the ELF file at ``path``, by short name ("info",
    "line"...), each read once when first asked for."""

    def __init__(self, path: str):
        self.path = path
        self._handle = open(path, "rb")  # kept for the file's life
        self._headers = RawElf(self._handle, path).sections
        self._bytes: Dict[str, Optional[bytes]] = {}
        # sections read in parts (_part): name -> (buffer, offsets of the units read)
        self._parts: Dict[str, Tuple[Buffer, Set[int]]] = {}
        self._sources: Dict[str, Optional[Tuple[BinaryIO, int, int]]] = {}
        self._inflating: Dict[str, _Inflating] = {}  # compressed, read in parts
        self._pyelftools = None

    def has(self, name: str) -> bool:
        return f".debug_{name}" in self._headers

    def get(self, name: str) -> Optional[bytes]:
        """.debug_NAME's bytes, None when the file has none."""
        if name not in self._bytes:
            header = self._headers.get(f".debug_{name}")
            inflating = self._inflating.get(name)
            if header is None:
                self._bytes[name] = None
            elif inflating is not None:  # inflated in part already: on to its end
                inflating.through(inflating.size)
                self._bytes[name] = inflating.buffer
            else:
                from .section_cache import section_bytes
                self._bytes[name] = section_bytes(
                    self.path, DebugSection(self._handle, header.name, header))
        return self._bytes[name]

    def prefix(self, name: str, end: int):
        """Section ``name`` with (at least) its first ``end`` bytes ready: a compressed
        one without a copy on disk inflated that far (``_Inflating``), any other read
        whole; None when the file has none.  The same object each time."""
        if self._bytes.get(name) is None and self._source(name) is None:
            inflating = self._inflater(name)
            if inflating is not None:
                inflating.through(end)
                return inflating.buffer
        return self.get(name)

    def unit_bytes(self, offset: int):
        """``.debug_info`` with (at least) the unit at ``offset`` read (``_part``)."""
        return self._part("info", offset)

    def line_bytes(self, offset: int):
        """``.debug_line`` with (at least) the line program at ``offset`` read."""
        return self._part("line", offset)

    def _part(self, name: str, offset: int):
        """Section ``name`` with the unit at ``offset`` (a 32-bit length, then as many
        bytes) read: a section-sized buffer holding only the units asked for, or the
        whole section when it was read already or cannot be read in parts (compressed
        and not inflated on disk yet).  CPython's .debug_info is 16 MB, of which a
        backtrace reads a few units: reading it whole was ~10 ms, mostly page faults."""
        if self._bytes.get(name) is not None:
            return self._bytes[name]
        source = self._source(name)
        if source is None:
            inflating = self._inflater(name)
            if inflating is None:
                return self.get(name)
            inflating.through(offset + 4)
            length = int.from_bytes(inflating.buffer[offset:offset + 4], "little")
            inflating.through(offset + 4 + (length if length < 0xFFFFFFF0 else 0))
            return inflating.buffer
        handle, base, size = source
        part = self._parts.get(name)
        if part is None:
            part = self._parts[name] = (_zeroed(size), set())
        data, read = part
        if offset not in read and 0 <= offset < size:
            self._fill(handle, base, data, offset, min(size, offset + 4))
            length = int.from_bytes(data[offset:offset + 4], "little")
            if length < 0xFFFFFFF0:
                self._fill(handle, base, data, offset, min(size, offset + 4 + length))
            read.add(offset)
        return data

    def _source(self, name: str) -> Optional[Tuple[BinaryIO, int, int]]:
        """(open file, offset, size) of section ``name``'s bytes as the reader uses
        them: in the ELF file, or (compressed) in the inflated copy on disk; None
        when they are not on disk as such."""
        if name in self._sources:
            return self._sources[name]
        header = self._headers.get(f".debug_{name}")
        found = None
        if header is not None and header["sh_type"] != SHT_NOBITS:
            if not header["sh_flags"] & SHF_COMPRESSED:
                found = (self._handle, header["sh_offset"], header["sh_size"])
            else:
                from .section_cache import cached_copy
                section = DebugSection(self._handle, header.name, header)
                entry = cached_copy(self.path, section)
                if entry is not None:
                    try:
                        found = (open(entry, "rb"), 0, section.data_size)
                    except OSError:
                        found = None
        self._sources[name] = found
        return found

    def _inflater(self, name: str) -> Optional[_Inflating]:
        """Section ``name`` inflated in part (compressed with zlib, no whole copy on
        disk), None for any other."""
        found = self._inflating.get(name)
        if found is None:
            header = self._headers.get(f".debug_{name}")
            if header is None or header["sh_type"] == SHT_NOBITS \
                    or not header["sh_flags"] & SHF_COMPRESSED:
                return None
            section = DebugSection(self._handle, header.name, header)
            if section._kind != ELFCOMPRESS_ZLIB:
                return None
            from .section_cache import kept_start
            found = self._inflating[name] = _Inflating(self._handle, header,
                                                       section.data_size,
                                                       kept_start(self.path, section))
            if not _partly_inflated:
                import atexit
                atexit.register(_keep_inflated)
            _partly_inflated.append((self.path, section, found))
        return found

    @staticmethod
    def _fill(handle, base: int, data: Buffer, start: int, end: int) -> None:
        handle.seek(base + start)
        handle.readinto(memoryview(data)[start:end])

    def unit_offsets(self, limit: int = 1_000_000) -> List[int]:
        """The offset of each unit of ``.debug_info`` (32-bit DWARF), from their headers
        alone where the section is not read whole.  Raises ValueError for 64-bit
        DWARF."""
        source = None if self._bytes.get("info") is not None else self._source("info")
        if source is None:
            data = self.get("info") or b""
            size = len(data)

            def read(at: int) -> bytes:
                return data[at:at + 4]
        else:
            handle, base, size = source

            def read(at: int) -> bytes:
                handle.seek(base + at)
                return handle.read(4)
        at = 0
        found: List[int] = []
        while at + 11 <= size and len(found) < limit:
            length = int.from_bytes(read(at), "little")
            if length >= 0xFFFFFFF0:
                raise ValueError("64-bit DWARF")
            found.append(at)
            at += 4 + length
        return found

    def pyelftools_dwarf(self):
        """pyelftools' DWARFInfo of the file, its sections shared with ours: for the
        entries, line programs and range lists the quick reader leaves to it."""
        if self._pyelftools is None:
            self._pyelftools = _pyelftools_dwarf(self)
        return self._pyelftools


_missing: List[str] = []  # what needed pyelftools in a Python without it


def needed_pyelftools(what: str) -> None:
    """Note that ``what`` needed pyelftools and it is not installed (said once, after
    the stacks: ``missing_pyelftools``)."""
    if what not in _missing:
        _missing.append(what)


def missing_pyelftools() -> List[str]:
    return list(_missing)


def _pyelftools_dwarf(sections: DebugSections):
    import io
    try:
        from elftools.dwarf.dwarfinfo import DebugSectionDescriptor
        from elftools.elf.elffile import ELFFile
    except ImportError:
        needed_pyelftools("DWARF")
        raise

    class Lean(ELFFile):
        """No section read before it is used; no relocations looked for (linked
        files have none to apply, and the search costs 50 ms a file)."""

        def _read_dwarf_section(self, section, relocate_dwarf_sections):
            return DebugSectionDescriptor(
                stream=_OnFirstRead(sections, section.name[len(".debug_"):]),
                name=section.name, global_offset=section["sh_offset"],
                size=section.data_size, address=section["sh_addr"])

    class _OnFirstRead:
        def __init__(self, owner: DebugSections, name: str):
            self._owner, self._name = owner, name
            self._stream: Optional[io.BytesIO] = None

        def __getattr__(self, attribute):
            if self._stream is None:
                # BytesIO shares the bytes read
                self._stream = io.BytesIO(self._owner.get(self._name) or b"")
            return getattr(self._stream, attribute)

    return Lean(open(sections.path, "rb")).get_dwarf_info(relocate_dwarf_sections=False,
                                                          follow_links=False)
