"""Read CPython objects out of the inferior's memory (strings, bytes, type names).

Helpers take a :class:`~jit_unwind.target.Memory`, a :class:`Layout` and an object
address.  They raise :class:`~jit_unwind.target.MemoryReadError` for unreadable memory and
:class:`ObjectError` for objects that cannot be right (absurd sizes, unknown string kinds).
"""

import struct
from functools import lru_cache
from operator import itemgetter
from typing import Dict, Mapping, Tuple

from ..target import Memory
from .errors import ObjectError
from .layout import Layout

__all__ = ["StructReader", "read_struct", "read_unicode",
           "unicode_state_bits", "read_bytes", "read_c_string", "read_type_name",
           "MAX_STRING", "MAX_BYTES"]

MAX_STRING = 1 << 16  # characters of a name or file name we are willing to read
MAX_BYTES = 1 << 22   # bytes of a co_linetable


class StructReader:
    """A C struct's fields (``{name: (offset, format)}``, :mod:`struct` formats:
    ``"Q"`` pointer/unsigned long, ``"q"`` int64, ``"i"`` int, ``"b"`` char, ``"?"``
    bool) read with a single memory read and one unpack, the plan made once: some
    structs are read thousands of times a stop (an interpreter frame per Python frame)."""

    def __init__(self, fields: Mapping[str, Tuple[int, str]]):
        self.names = tuple(fields)
        self.low = min(offset for offset, _ in fields.values())
        high = max(offset + struct.calcsize("<" + fmt) for offset, fmt in fields.values())
        self.size = high - self.low
        order = sorted(range(len(self.names)), key=lambda i: fields[self.names[i]][0])
        layout, at = "<", self.low
        for index in order:
            offset, fmt = fields[self.names[index]]
            if offset < at:  # overlapping fields: one unpack each
                self._unpack = None
                self._fields = [(struct.Struct("<" + fmt).unpack_from, offset - self.low)
                                for offset, fmt in fields.values()]
                return
            layout += f"{offset - at}x{fmt}" if offset > at else fmt
            at = offset + struct.calcsize("<" + fmt)
        self._unpack = struct.Struct(layout).unpack_from
        # position of each field (in ``names`` order) among the unpacked values
        positions = [order.index(i) for i in range(len(self.names))]
        pick = itemgetter(*positions)
        self._pick = pick if len(positions) > 1 else lambda values: (pick(values),)

    def read(self, memory: Memory, address: int) -> Tuple[int, ...]:
        """The fields' values in ``names`` order; raises MemoryReadError."""
        data = memory.read(address + self.low, self.size)
        if self._unpack is None:
            return tuple(unpack(data, at)[0] for unpack, at in self._fields)
        return self._pick(self._unpack(data))


@lru_cache(maxsize=256)
def _reader(items: Tuple[Tuple[str, Tuple[int, str]], ...]) -> StructReader:
    return StructReader(dict(items))


def read_struct(memory: Memory, address: int,
                fields: Mapping[str, Tuple[int, str]]) -> Dict[str, int]:
    """Read several fields of one C struct with a single memory read (see
    :class:`StructReader` for ``fields``)."""
    reader = _reader(tuple(fields.items()))
    return dict(zip(reader.names, reader.read(memory, address)))


def unicode_state_bits(state: int, free_threaded: bool) -> Tuple[int, int, int]:
    """``(kind, compact, ascii)`` of a ``PyASCIIObject.state``: bit fields ``interned:2,
    kind:3, compact:1, ascii:1``, except where a free-threaded build (3.14t) made
    ``interned`` a whole byte and the others follow from bit 8.  The two shapes cannot be
    mistaken for each other: bits 2 to 7 hold a kind of 1, 2 or 4 in the first and only
    ``interned``'s zero high bits in the second."""
    if free_threaded and not state & 0xFC:
        state >>= 6
    return (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1


def read_unicode(memory: Memory, layout: Layout, address: int) -> str:
    """The text of a ``PyUnicodeObject *``.

    ``PyASCIIObject.state`` is a bit field: ``interned:2, kind:3, compact:1, ascii:1``.
    Compact ASCII strings keep their characters right after ``PyASCIIObject``; other
    compact strings after ``PyCompactUnicodeObject``, ``kind`` bytes per character (1
    latin-1, 2 UCS-2, 4 UCS-4); legacy strings through ``PyUnicodeObject.data.any``."""
    if not address:
        raise ObjectError("NULL string")
    fields = read_struct(memory, address, {"length": (layout.unicode_length, "q"),
                                           "state": (layout.unicode_state, "I")})
    length = fields["length"]
    kind, compact, ascii_only = unicode_state_bits(fields["state"], layout.free_threaded)
    if not 0 <= length <= MAX_STRING:
        raise ObjectError(f"string at {address:#x} has length {length}")
    if kind not in (1, 2, 4):
        raise ObjectError(f"string at {address:#x} has kind {kind}")
    if compact and ascii_only:
        data_address = address + layout.unicode_ascii_size
    elif compact:
        data_address = address + layout.unicode_compact_size
    else:
        data_address = memory.read_u64(address + layout.unicode_compact_size)
        if not data_address:
            raise ObjectError(f"string at {address:#x} has no data (not ready)")
    data = memory.read(data_address, length * kind) if length else b""
    encoding = {1: "ascii" if ascii_only else "latin-1", 2: "utf-16-le",
                4: "utf-32-le"}[kind]
    return data.decode(encoding, errors="replace")


def read_bytes(memory: Memory, layout: Layout, address: int) -> bytes:
    """The contents of a ``PyBytesObject *`` (``ob_size`` bytes of ``ob_sval``)."""
    if not address:
        raise ObjectError("NULL bytes object")
    size = struct.unpack("<q", memory.read(address + layout.bytes_size, 8))[0]
    if not 0 <= size <= MAX_BYTES:
        raise ObjectError(f"bytes object at {address:#x} has size {size}")
    return memory.read(address + layout.bytes_data, size) if size else b""


def read_c_string(memory: Memory, address: int, limit: int = 256) -> str:
    """A NUL-terminated ``const char *`` of at most ``limit`` bytes."""
    out = bytearray()
    while len(out) < limit:
        chunk = memory.try_read(address + len(out), 16)
        if chunk is None:
            chunk = memory.read(address + len(out), 1)
        end = chunk.find(b"\0")
        if end >= 0:
            out += chunk[:end]
            return out.decode("utf-8", errors="replace")
        out += chunk
    raise ObjectError(f"string at {address:#x} is longer than {limit} bytes")


def read_type_name(memory: Memory, layout: Layout, address: int) -> str:
    """``Py_TYPE(obj)->tp_name`` of the object at ``address``."""
    type_address = memory.read_u64(address + layout.ob_type)
    if not type_address:
        raise ObjectError(f"object at {address:#x} has no type")
    return read_c_string(memory, memory.read_u64(type_address + layout.tp_name))
