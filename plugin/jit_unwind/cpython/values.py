"""Short text of a Python object read out of the inferior, as pystack and py-spy show
a frame's locals: a repr for ``None``, ``bool``, ``int``, ``float``, ``str`` and
``bytes``; ``<TYPE at 0xADDRESS>`` for any other object.  Objects are known by their
type's name (``tp_name``), so a subclass of ``int`` or ``str`` is shown as the object it
is, not as its base's value.  Everything is bounded: strings and bytes are read only as
far as shown, ints only up to :data:`MAX_INT_DIGITS` digits.

Offsets come from :class:`ValueLayout`: ``_Py_DebugOffsets`` where the process publishes
them (3.13+), else (3.11/3.12) the sizes measured with ``ptype /o`` on pyenv's 3.11.7
and 3.12.1.
"""

import struct
from ..records import record
from typing import Dict, Optional, Tuple

from ..target import JitUnwindError, Memory
from .dicts import ObjectLayout
from .errors import ObjectError
from .objects import read_c_string, unicode_state_bits

__all__ = ["ValueLayout", "value_layout", "ValueReader", "MAX_STR_CHARS",
           "MAX_BYTES_SHOWN", "MAX_INT_DIGITS"]

MAX_STR_CHARS = 80     # characters of a str shown (then "...")
MAX_BYTES_SHOWN = 40   # bytes of a bytes object shown
MAX_INT_DIGITS = 128   # 30-bit digits of an int read (2**3840); bigger ints by size
MAX_INT_TEXT = 60      # decimal digits shown of a big int (then "...")
_DIGIT_BITS = 30


@record(frozen=True)
class ValueLayout:
    """Where the values are: ``PyFloatObject.ob_fval``, the ``PyLongObject`` digits (the
    :class:`ObjectLayout`), strings and bytes (its base :class:`Layout`)."""

    objects: ObjectLayout
    float_value: int = 16


def value_layout(objects: ObjectLayout) -> ValueLayout:
    table = objects.base.debug_offsets or {}
    return ValueLayout(objects, float_value=table.get("float_object.ob_fval", 16))


def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


class ValueReader:
    """Renders objects of one stopped process; caches type names by type address (a
    frame's locals share a few types).  Build one per stop."""

    def __init__(self, memory: Memory, layout: ValueLayout):
        self.memory = memory
        self.layout = layout
        self._type_names: Dict[int, str] = {}

    def type_name(self, address: int) -> str:
        """``Py_TYPE(obj)->tp_name``; raises ObjectError or MemoryReadError."""
        base = self.layout.objects.base
        if not address or address % 8:
            raise ObjectError(f"bad object pointer {address:#x}")
        type_address = self.memory.read_u64(address + base.ob_type)
        if not type_address or type_address % 8:
            raise ObjectError(f"object at {address:#x} has a bad type pointer "
                              f"{type_address:#x}")
        name = self._type_names.get(type_address)
        if name is None:
            name = read_c_string(self.memory, self.memory.read_u64(
                type_address + base.tp_name), limit=128)
            self._type_names[type_address] = name
        return name

    def render(self, address: int) -> Tuple[Optional[str], str]:
        """``(type name, text)`` of the object at ``address``; ``(None, "<unreadable
        ...>")`` when its memory or type cannot be read.  Never raises."""
        try:
            type_name = self.type_name(address)
        except JitUnwindError as error:
            return None, f"<unreadable object at {address:#x}: {error}>"
        try:
            text = self._text(type_name, address)
        except JitUnwindError as error:
            text = f"<{type_name} at {address:#x}: unreadable: {error}>"
        return type_name, text

    def _text(self, type_name: str, address: int) -> str:
        if type_name == "NoneType":
            return "None"
        if type_name == "bool":
            return "True" if self.int_value(address) else "False"
        if type_name == "int":
            return self.int_text(address)
        if type_name == "float":
            data = self.memory.read(address + self.layout.float_value, 8)
            return repr(struct.unpack("<d", data)[0])
        if type_name == "str":
            return self.str_text(address)
        if type_name == "bytes":
            return self.bytes_text(address)
        return f"<{type_name} at {address:#x}>"

    # -- ints ------------------------------------------------------------------------

    def _int_shape(self, address: int) -> Tuple[int, int]:
        """``(sign, number of 30-bit digits)`` of a ``PyLongObject``: 3.12+ ``lv_tag``
        (digits << 3 | 0 positive, 1 zero, 2 negative), 3.11 a signed ``ob_size``."""
        objects = self.layout.objects
        word = self.memory.read_u64(address + objects.long_size)
        if objects.long_tagged:
            count, sign = word >> 3, 1 - (word & 3)
            if sign not in (-1, 0, 1):
                raise ObjectError(f"bad sign in lv_tag {word:#x}")
        else:
            size = _signed(word)
            count, sign = abs(size), (size > 0) - (size < 0)
        return sign, 0 if sign == 0 else count

    def int_value(self, address: int) -> int:
        """The value of an int of at most :data:`MAX_INT_DIGITS` digits."""
        sign, count = self._int_shape(address)
        if count > MAX_INT_DIGITS:
            raise ObjectError(f"{count} digits")
        if not count:
            return 0
        digits = struct.unpack(f"<{count}I", self.memory.read(
            address + self.layout.objects.long_digits, 4 * count))
        if any(digit >> _DIGIT_BITS for digit in digits):
            raise ObjectError("a digit wider than 30 bits")
        value = 0
        for digit in reversed(digits):
            value = (value << _DIGIT_BITS) | digit
        return sign * value

    def int_text(self, address: int) -> str:
        sign, count = self._int_shape(address)
        if count > MAX_INT_DIGITS:
            return f"<int at {address:#x}: about {count * _DIGIT_BITS} bits>"
        text = str(self.int_value(address))
        if len(text) > MAX_INT_TEXT:
            digits = len(text) - (text[0] == "-")
            return f"{text[:MAX_INT_TEXT]}... ({digits} digits)"
        return text

    # -- strings and bytes -----------------------------------------------------------

    def str_text(self, address: int) -> str:
        """The repr of a ``str``, its first :data:`MAX_STR_CHARS` characters."""
        base = self.layout.objects.base
        head = self.memory.read(address, max(base.unicode_state + 4,
                                               base.unicode_length + 8))
        length = struct.unpack_from("<q", head, base.unicode_length)[0]
        state = struct.unpack_from("<I", head, base.unicode_state)[0]
        kind, compact, ascii_only = unicode_state_bits(state, base.free_threaded)
        if length < 0 or kind not in (1, 2, 4):
            raise ObjectError(f"length {length}, kind {kind}")
        if compact and ascii_only:
            data_address = address + base.unicode_ascii_size
        elif compact:
            data_address = address + base.unicode_compact_size
        else:  # a legacy string: its characters elsewhere
            data_address = self.memory.read_u64(address + base.unicode_compact_size)
            if not data_address:
                raise ObjectError("no data")
        shown = min(length, MAX_STR_CHARS)
        data = self.memory.read(data_address, shown * kind) if shown else b""
        encoding = {1: "ascii" if ascii_only else "latin-1", 2: "utf-16-le",
                    4: "utf-32-le"}[kind]
        text = repr(data.decode(encoding, errors="replace"))
        return text if shown == length else f"{text}... ({length} characters)"

    def bytes_text(self, address: int) -> str:
        """The repr of a ``bytes``, its first :data:`MAX_BYTES_SHOWN` bytes."""
        base = self.layout.objects.base
        size = _signed(self.memory.read_u64(address + base.bytes_size))
        if size < 0:
            raise ObjectError(f"size {size}")
        shown = min(size, MAX_BYTES_SHOWN)
        data = self.memory.read(address + base.bytes_data, shown) if shown else b""
        return repr(data) if shown == size else f"{data!r}... ({size} bytes)"
