"""Read dicts, ints, modules and instance attributes out of a stopped CPython.

The C types read (x86-64, CPython 3.11 to 3.15; free-threaded builds have a bigger
object header, which moves every offset into an object)::

    PyDictObject       {PyObject_HEAD; ma_used; ma_version_tag (3.14+: _ma_watcher_tag);
                        PyDictKeysObject *ma_keys; PyDictValues *ma_values}
    PyDictKeysObject   {dk_refcnt; uint8 dk_log2_size, dk_log2_index_bytes, dk_kind;
                        uint32 dk_version; dk_usable; dk_nentries; char dk_indices[]}
                       then the entries: PyDictKeyEntry {hash, key, value} (dk_kind 0,
                       "general") or PyDictUnicodeEntry {key, value} (1 "unicode",
                       2 "split": the values live in a PyDictValues)
    PyDictValues       3.11/3.12: {PyObject *values[]}; 3.13+: {uint8 capacity, size,
                       embedded, valid; PyObject *values[]}; values[i] goes with entry i
    PyLongObject       3.11: PyVarObject whose ob_size carries the sign and the digit
                       count; 3.12+: {PyObject_HEAD; uintptr_t lv_tag (digits << 3 | sign:
                       0 positive, 1 zero, 2 negative); digit ob_digit[]}; 30-bit digits
    PyModuleObject     {PyObject_HEAD; PyObject *md_dict; ...}

Instances of ordinary classes (``Py_TPFLAGS_MANAGED_DICT``) keep their attributes before
or after the object header, with the keys in the heap type's ``ht_cached_keys``:

* 3.11: ``PyDictValues *`` at ``obj - 32``, the materialized ``PyDictObject *`` at
  ``obj - 24`` (one of them is NULL);
* 3.12: one word at ``obj - 24``: a dict, or values pointer minus one (low bit set);
* 3.13+: the dict pointer at ``obj - 24``; while it is NULL, types with
  ``Py_TPFLAGS_INLINE_VALUES`` keep a ``PyDictValues`` right after the object (at
  ``tp_basicsize``), used when its ``valid`` byte is set.

Other types use ``tp_dictoffset`` (> 0: a ``PyObject **`` inside the object).

3.11/3.12 offsets were measured with ``ptype /o`` on pyenv's 3.11.7 and 3.12.1; 3.13+
take what ``_Py_DebugOffsets`` publishes (``imports.modules``, ``ma_keys``/``ma_values``,
``lv_tag``/``ob_digit``, ``tp_flags``, and in 3.15 ``tp_basicsize``, ``tp_dictoffset``,
``ht_cached_keys``); the rest comes from the table below, checked against the DWARF of
3.13.0 and read from CPython's headers for 3.14/3.15 (Include/internal/pycore_dict.h,
pycore_object.h, cpython/object.h, cpython/longintrepr.h).

Readers raise :class:`~jit_unwind.target.MemoryReadError` for unreadable memory and
:class:`ObjectError` for objects that cannot be right; every loop is bounded.
"""

import struct
from ..records import record
from typing import Dict, List, Optional, Tuple

from ..target import Memory
from .errors import LayoutError, ObjectError
from .layout import Layout, check_supported
from .objects import read_struct, read_unicode, unicode_state_bits

__all__ = ["ObjectLayout", "object_layout", "type_flags", "read_int", "read_dict_items",
           "dict_get_str", "read_attribute", "read_module_dict", "find_module",
           "MAX_DICT_ENTRIES", "MAX_INT_DIGITS"]

MAX_DICT_ENTRIES = 1 << 18  # entries of one dict table we are willing to read
MAX_INT_DIGITS = 64         # 30-bit digits: ints up to 2**1920

# tp_flags bits (Include/object.h)
INLINE_VALUES = 1 << 2      # 3.13+
MANAGED_DICT = 1 << 4
HEAPTYPE = 1 << 9
LONG_SUBCLASS = 1 << 24
UNICODE_SUBCLASS = 1 << 28
DICT_SUBCLASS = 1 << 29

# dk_kind (DictKeysKind)
KEYS_GENERAL, KEYS_UNICODE, KEYS_SPLIT = 0, 1, 2

_DIGIT_BITS = 30


@record(frozen=True)
class ObjectLayout:
    """Offsets of the containers read here, plus the runtime's :class:`Layout` (strings,
    ``ob_type``).  ``managed`` names the instance-attribute scheme: ``"3.11"`` (values
    and dict slots), ``"3.12"`` (tagged dict-or-values word) or ``"3.13"`` (dict slot
    plus inline values)."""

    base: Layout
    interp_modules: int             # PyInterpreterState.modules / .imports.modules
    dict_keys: int = 32             # PyDictObject.ma_keys
    dict_values: int = 40           # PyDictObject.ma_values
    keys_log2_size: int = 8         # PyDictKeysObject.dk_log2_size
    keys_log2_index_bytes: int = 9
    keys_kind: int = 10
    keys_nentries: int = 24
    keys_indices: int = 32
    values_items: int = 0           # PyDictValues.values (3.13+: 8, after 4 bytes)
    values_capacity: Optional[int] = None  # 3.13+: uint8_t capacity
    values_valid: Optional[int] = None     # 3.13+: uint8_t valid
    module_dict: int = 16           # PyModuleObject.md_dict
    long_size: int = 16             # 3.11 ob_size, 3.12+ lv_tag
    long_digits: int = 24
    long_tagged: bool = True        # 3.12+ lv_tag
    tp_basicsize: int = 32
    tp_flags: int = 168
    tp_dictoffset: int = 288
    ht_cached_keys: int = 880
    managed: str = "3.13"
    managed_dict: int = -24         # MANAGED_DICT_OFFSET
    managed_values: int = -32       # 3.11 only: _PyObject_ValuesPointer


# Static part of the table (see the module docstring for where each number comes from).
_STATIC: Dict[Tuple[int, int], dict] = {
    (3, 11): dict(interp_modules=888, long_tagged=False, ht_cached_keys=872,
                  managed="3.11"),
    (3, 12): dict(interp_modules=944, managed="3.12"),
    (3, 13): dict(values_items=8, values_capacity=0, values_valid=3),
    (3, 14): dict(values_items=8, values_capacity=0, values_valid=3),
    (3, 15): dict(values_items=8, values_capacity=0, values_valid=3),
}

# sizeof(PyObject) in a GIL build, and the ObjectLayout fields that are offsets into
# objects past their header (shifted when the process's header is bigger).
_GIL_HEADER = 16
_AFTER_HEADER = {"module_dict", "tp_basicsize", "tp_dictoffset", "ht_cached_keys",
                 "dict_keys", "dict_values", "long_size", "long_digits", "tp_flags"}
# (the class keeps its fields' plain defaults, as a dataclass's does)
_STATIC_DEFAULTS = {name: getattr(ObjectLayout, name) for name in _AFTER_HEADER}


def _table_minor(layout: Layout) -> Tuple[int, int]:
    known = [minor for minor in _STATIC if minor <= layout.version.minor_version]
    if not known:
        raise LayoutError(f"no object layout for CPython {layout.version}")
    return max(known)


# ObjectLayout field -> _Py_DebugOffsets key (3.13+; absent keys keep the table value)
_FROM_DEBUG_OFFSETS = {
    "interp_modules": "interpreter_state.imports_modules",
    "dict_keys": "dict_object.ma_keys",
    "dict_values": "dict_object.ma_values",
    "long_size": "long_object.lv_tag",
    "long_digits": "long_object.ob_digit",
    "tp_flags": "type_object.tp_flags",
    "tp_basicsize": "type_object.tp_basicsize",
    "tp_dictoffset": "type_object.tp_dictoffset",
    "ht_cached_keys": "heap_type_object.ht_cached_keys",
}


def object_layout(memory: Memory, runtime: int, layout: Layout) -> ObjectLayout:
    """The :class:`ObjectLayout` of the runtime at ``runtime`` (``_PyRuntime``) whose
    :class:`Layout` is ``layout``.  Raises :class:`LayoutError` (or
    :class:`UnsupportedVersionError`) when the offsets cannot be trusted."""
    check_supported(layout.version)
    table = layout.debug_offsets
    if table is None:  # 3.11/3.12: the tables are all there is
        return ObjectLayout(base=layout, **_STATIC[_table_minor(layout)])
    # What _Py_DebugOffsets does not publish comes from the newest table not newer than
    # the version (a newer CPython is read as the newest one we know).
    fields = dict(_STATIC[_table_minor(layout)])
    # The table's offsets into objects were measured on GIL builds: a bigger object
    # header (free-threaded builds: ob_tid, ob_ref_local, ob_ref_shared...) moves them.
    grown = table.get("pyobject.size", _GIL_HEADER) - _GIL_HEADER
    for name in _AFTER_HEADER if grown else ():
        fields[name] = fields.get(name, _STATIC_DEFAULTS[name]) + grown
    fields.update((name, table[key]) for name, key in _FROM_DEBUG_OFFSETS.items()
                  if key in table)
    objects = ObjectLayout(base=layout, **fields)
    modules = objects.interp_modules
    if modules % 8 or not 0 < modules < table["interpreter_state.size"]:
        raise LayoutError(f"_Py_DebugOffsets puts imports.modules at {modules}, outside "
                          "PyInterpreterState")
    if objects.dict_values != objects.dict_keys + 8:
        raise LayoutError("_Py_DebugOffsets: ma_keys and ma_values are not adjacent")
    for name, key in _FROM_DEBUG_OFFSETS.items():
        value = getattr(objects, name)
        if name != "interp_modules" and (value % 4 or value >= 4096):
            raise LayoutError(f"_Py_DebugOffsets gives {key} an impossible offset {value}")
    return objects


# -- objects ------------------------------------------------------------------------

def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def type_flags(memory: Memory, objects: ObjectLayout, address: int) -> Tuple[int, int]:
    """``(Py_TYPE(obj), Py_TYPE(obj)->tp_flags)`` of the object at ``address``."""
    if not address or address % 8:
        raise ObjectError(f"bad object pointer {address:#x}")
    type_address = memory.read_u64(address + objects.base.ob_type)
    if not type_address or type_address % 8:
        raise ObjectError(f"object at {address:#x} has a bad type pointer "
                          f"{type_address:#x}")
    return type_address, memory.read_u64(type_address + objects.tp_flags)


def _require(memory: Memory, objects: ObjectLayout, address: int, flag: int,
             what: str) -> int:
    """The type of the object, after checking it is a ``what`` (``tp_flags & flag``)."""
    type_address, flags = type_flags(memory, objects, address)
    if not flags & flag:
        raise ObjectError(f"object at {address:#x} is not a {what}")
    return type_address


def read_int(memory: Memory, objects: ObjectLayout, address: int) -> int:
    """The value of the ``int`` (``PyLongObject *``) at ``address``."""
    _require(memory, objects, address, LONG_SUBCLASS, "int")
    word = memory.read_u64(address + objects.long_size)
    if objects.long_tagged:
        count, sign = word >> 3, 1 - (word & 3)
        if sign not in (-1, 0, 1):
            raise ObjectError(f"int at {address:#x} has a bad sign in lv_tag {word:#x}")
    else:
        size = _signed(word)
        count, sign = abs(size), (size > 0) - (size < 0)
    if count > MAX_INT_DIGITS:
        raise ObjectError(f"int at {address:#x} has {count} digits")
    if sign == 0 or count == 0:
        return 0
    digits = struct.unpack(f"<{count}I",
                           memory.read(address + objects.long_digits, 4 * count))
    if any(digit >> _DIGIT_BITS for digit in digits):
        raise ObjectError(f"int at {address:#x} has a digit wider than 30 bits")
    value = 0
    for digit in reversed(digits):
        value = (value << _DIGIT_BITS) | digit
    return sign * value


def _str_equals(memory: Memory, objects: ObjectLayout, address: int, text: str) -> bool:
    """Whether the ``str`` at ``address`` is ``text``, reading as little as possible:
    one read for a compact ASCII string."""
    base = objects.base
    wanted = text.encode("utf-8")
    head = memory.read(address, base.unicode_ascii_size)
    length = struct.unpack_from("<q", head, base.unicode_length)[0]
    state = struct.unpack_from("<I", head, base.unicode_state)[0]
    if length != len(text):
        return False
    _kind, compact, ascii_only = unicode_state_bits(state, base.free_threaded)
    if compact and ascii_only:  # compact ASCII: data follows the header
        return text.isascii() and memory.read(address + base.unicode_ascii_size,
                                              length) == wanted
    return read_unicode(memory, base, address) == text


# -- dicts --------------------------------------------------------------------------

def _keys_entries(memory: Memory, objects: ObjectLayout, keys: int
                  ) -> Tuple[int, List[Tuple[int, int]]]:
    """``(dk_kind, [(key, value)] per entry)`` of a ``PyDictKeysObject``; deleted
    entries have key 0, split tables value 0."""
    if not keys or keys % 8:
        raise ObjectError(f"bad dict keys pointer {keys:#x}")
    fields = read_struct(memory, keys, {
        "log2_size": (objects.keys_log2_size, "B"),
        "log2_index_bytes": (objects.keys_log2_index_bytes, "B"),
        "kind": (objects.keys_kind, "B"),
        "nentries": (objects.keys_nentries, "q")})
    log2_size, log2_index_bytes = fields["log2_size"], fields["log2_index_bytes"]
    kind, count = fields["kind"], fields["nentries"]
    # Index bytes: 1, 2, 4 or 8 per slot, so log2_index_bytes is log2_size + 0..3.
    if (kind not in (KEYS_GENERAL, KEYS_UNICODE, KEYS_SPLIT) or log2_size > 40
            or not log2_size <= log2_index_bytes <= log2_size + 3
            or not 0 <= count <= min((2 << log2_size) // 3 + 1, MAX_DICT_ENTRIES)):
        raise ObjectError(f"dict keys at {keys:#x} are not a keys table (kind {kind}, "
                          f"log2 size {log2_size}, {count} entries)")
    if not count:
        return kind, []
    entries = keys + objects.keys_indices + (1 << log2_index_bytes)
    width = 3 if kind == KEYS_GENERAL else 2  # {hash, key, value} or {key, value}
    words = struct.unpack(f"<{count * width}Q", memory.read(entries, 8 * width * count))
    pairs = [(words[i + width - 2], words[i + width - 1])
             for i in range(0, len(words), width)]
    return kind, pairs


def _values_array(memory: Memory, objects: ObjectLayout, values: int, count: int
                  ) -> List[int]:
    """The first ``count`` slots of a ``PyDictValues`` (fewer if its capacity says so)."""
    if values % 8:
        raise ObjectError(f"misaligned dict values pointer {values:#x}")
    if objects.values_capacity is not None:
        count = min(count, memory.read(values + objects.values_capacity, 1)[0])
    if count <= 0:
        return []
    return list(struct.unpack(f"<{count}Q",
                              memory.read(values + objects.values_items, 8 * count)))


def _split_items(memory: Memory, objects: ObjectLayout, keys: int, values: int
                 ) -> List[Tuple[int, int]]:
    _, pairs = _keys_entries(memory, objects, keys)
    slots = _values_array(memory, objects, values, len(pairs))
    return [(key, value) for (key, _), value in zip(pairs, slots) if key and value]


def _dict_table(memory: Memory, objects: ObjectLayout, address: int
                ) -> Tuple[int, List[Tuple[int, int]]]:
    _require(memory, objects, address, DICT_SUBCLASS, "dict")
    keys, values = struct.unpack("<QQ", memory.read(address + objects.dict_keys, 16))
    if values:
        return KEYS_SPLIT, _split_items(memory, objects, keys, values)
    kind, pairs = _keys_entries(memory, objects, keys)
    return kind, [(key, value) for key, value in pairs if key and value]


def read_dict_items(memory: Memory, objects: ObjectLayout, address: int
                    ) -> List[Tuple[int, int]]:
    """``(key, value)`` object addresses of the ``dict`` at ``address`` (combined or
    split table), in entry order."""
    return _dict_table(memory, objects, address)[1]


def dict_get_str(memory: Memory, objects: ObjectLayout, address: int, name: str
                 ) -> Optional[int]:
    """``d[name]`` (an object address) for the ``dict`` at ``address``; None if absent.
    Keys that are not ``str`` are skipped."""
    kind, pairs = _dict_table(memory, objects, address)
    return _find_str(memory, objects, kind, pairs, name)


def _find_str(memory: Memory, objects: ObjectLayout, kind: int,
              pairs: List[Tuple[int, int]], name: str) -> Optional[int]:
    for key, value in pairs:
        if kind == KEYS_GENERAL:
            try:
                _require(memory, objects, key, UNICODE_SUBCLASS, "str")
            except ObjectError:
                continue
        if _str_equals(memory, objects, key, name):
            return value
    return None


# -- instances and modules ----------------------------------------------------------

def _lookup_values(memory: Memory, objects: ObjectLayout, type_address: int, values: int,
                   name: str) -> Optional[int]:
    """``name`` in a ``PyDictValues`` whose keys are the type's ``ht_cached_keys``."""
    keys = memory.read_u64(type_address + objects.ht_cached_keys)
    if not keys:
        raise ObjectError(f"type at {type_address:#x} has no cached keys")
    pairs = _split_items(memory, objects, keys, values)
    return _find_str(memory, objects, KEYS_SPLIT, pairs, name)


def read_attribute(memory: Memory, objects: ObjectLayout, address: int, name: str
                   ) -> Optional[int]:
    """``obj.__dict__[name]`` (an object address) of the instance at ``address``, None
    when the instance has no such attribute or no ``__dict__``.  Class attributes,
    slots and descriptors are not looked at."""
    type_address, flags = type_flags(memory, objects, address)
    dict_address = 0
    if flags & MANAGED_DICT:
        if not flags & HEAPTYPE:
            raise ObjectError(f"type at {type_address:#x} manages a dict but is not a "
                              "heap type")
        slot = memory.read_u64(address + objects.managed_dict)
        if objects.managed == "3.11":
            values = memory.read_u64(address + objects.managed_values)
            if values:
                return _lookup_values(memory, objects, type_address, values, name)
            dict_address = slot
        elif objects.managed == "3.12":
            if slot & 1:
                return _lookup_values(memory, objects, type_address, slot + 1, name)
            dict_address = slot
        else:
            dict_address = slot
            if not dict_address and flags & INLINE_VALUES:
                basicsize = _signed(memory.read_u64(type_address + objects.tp_basicsize))
                if basicsize <= 0 or basicsize % 8 or basicsize > 1 << 16:
                    raise ObjectError(f"type at {type_address:#x} has tp_basicsize "
                                      f"{basicsize}")
                values = address + basicsize
                if objects.values_valid is None:
                    raise ObjectError("no offset of the inline values' valid flag")
                if not memory.read(values + objects.values_valid, 1)[0]:
                    return None  # invalidated and no dict: no attributes
                return _lookup_values(memory, objects, type_address, values, name)
    else:
        offset = _signed(memory.read_u64(type_address + objects.tp_dictoffset))
        if offset > 0:
            if offset % 8 or offset > 1 << 16:
                raise ObjectError(f"type at {type_address:#x} has tp_dictoffset {offset}")
            dict_address = memory.read_u64(address + offset)
    if not dict_address:
        return None
    return dict_get_str(memory, objects, dict_address, name)


def read_module_dict(memory: Memory, objects: ObjectLayout, module: int) -> int:
    """``PyModuleObject.md_dict`` of the module at ``module``."""
    dict_address = memory.read_u64(module + objects.module_dict)
    if not dict_address:
        raise ObjectError(f"module at {module:#x} has no __dict__")
    return dict_address


def find_module(memory: Memory, objects: ObjectLayout, interp: int, name: str
                ) -> Optional[int]:
    """``sys.modules[name]`` of the interpreter ``interp`` (``PyInterpreterState *``),
    None when the module is not imported (or ``sys.modules`` does not exist yet)."""
    modules = memory.read_u64(interp + objects.interp_modules)
    if not modules:
        return None
    return dict_get_str(memory, objects, modules, name)
