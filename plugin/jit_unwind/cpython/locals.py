"""The variables of Python frames (``py-mixed-bt --locals``), read from memory only.

A frame's variables are ``_PyInterpreterFrame.localsplus[i]`` for ``i`` below the number
of names in its code object's ``co_localsplusnames`` (a tuple of str); the same index of
``co_localspluskinds`` (a bytes) says what each one is: ``CO_FAST_LOCAL`` 0x20,
``CO_FAST_CELL`` 0x40 (a local that inner functions share: a ``cell`` once
``MAKE_CELL`` ran), ``CO_FAST_FREE`` 0x80 (the enclosing function's cell, copied in),
``CO_FAST_HIDDEN`` 0x10 (3.12+: a variable of an inlined comprehension, left out here as
``frame.f_locals`` does).  A NULL slot is a variable not bound yet: left out.

Slots are ``PyObject *`` up to 3.13 and ``_PyStackRef`` from 3.14 (both builds): the
low bits are a tag, told apart by their value rather than by the version (objects are
8-aligned, so a plain pointer has none): ``0b11`` a tagged int (its value shifted left
by 2), else clearing bits 0-1 gives the object (bit 0: a deferred or immortal
reference; 3.14's NULL is the bare tag 1).

Offsets: ``_Py_DebugOffsets`` (``interpreter_frame.localsplus``,
``code_object.localsplusnames``/``localspluskinds``, ``tuple_object.*``,
``pyobject.size``) on 3.13+; on 3.11/3.12 the table below, measured with ``ptype /o`` on
pyenv's 3.11.7 and 3.12.1.  Nothing raises: what cannot be read says so.
"""

import struct
from ..records import record, replace
from typing import List, Optional, Tuple

from ..model import FrameLocals, LocalVariable, PyFrame, PyThread
from ..target import JitUnwindError, Memory, MemoryReadError
from .dicts import object_layout
from .errors import LayoutError, ObjectError
from .objects import read_bytes, read_struct, read_unicode
from .values import ValueLayout, ValueReader, value_layout

__all__ = ["LocalsLayout", "locals_layout", "LocalsReader", "with_locals",
           "MAX_LOCALS", "MAX_SLOTS"]

MAX_LOCALS = 64     # variables shown per frame (then "N more")
MAX_SLOTS = 4096    # slots of one frame looked at (co_nlocalsplus is rarely over 100)

CO_FAST_HIDDEN, CO_FAST_CELL, CO_FAST_FREE = 0x10, 0x40, 0x80
_INT_TAG, _TAG_BITS = 3, 3


@record(frozen=True)
class LocalsLayout:
    frame_localsplus: int   # _PyInterpreterFrame.localsplus
    code_names: int         # PyCodeObject.co_localsplusnames
    code_kinds: int         # PyCodeObject.co_localspluskinds
    tuple_size: int         # PyTupleObject.ob_size
    tuple_items: int        # PyTupleObject.ob_item
    cell_ref: int           # PyCellObject.ob_ref: right after the object header
    values: ValueLayout


# 3.11 and 3.12 (no _Py_DebugOffsets): the same offsets in both.
_STATIC = dict(frame_localsplus=72, code_names=96, code_kinds=104, tuple_size=16,
               tuple_items=24, cell_ref=16)
_FROM_DEBUG_OFFSETS = {
    "frame_localsplus": "interpreter_frame.localsplus",
    "code_names": "code_object.localsplusnames",
    "code_kinds": "code_object.localspluskinds",
    "tuple_size": "tuple_object.ob_size",
    "tuple_items": "tuple_object.ob_item",
    "cell_ref": "pyobject.size",
}


def locals_layout(memory: Memory, runtime_address: int, layout) -> LocalsLayout:
    """The offsets for the runtime whose :class:`Layout` is ``layout``; raises
    :class:`LayoutError` when ``_Py_DebugOffsets`` gives implausible ones."""
    objects = object_layout(memory, runtime_address, layout)
    table = layout.debug_offsets
    fields = dict(_STATIC)
    if table is not None:
        missing = [key for key in _FROM_DEBUG_OFFSETS.values() if key not in table]
        if missing:
            raise LayoutError(f"_Py_DebugOffsets publishes no {', '.join(missing)}")
        fields = {name: table[key] for name, key in _FROM_DEBUG_OFFSETS.items()}
        for name, key in _FROM_DEBUG_OFFSETS.items():
            if fields[name] % 8 or not 0 < fields[name] <= 4096:
                raise LayoutError(f"_Py_DebugOffsets gives {key} an impossible offset "
                                  f"{fields[name]}")
    return LocalsLayout(values=value_layout(objects), **fields)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


class LocalsReader:
    """Reads frames' variables of one stopped process.  Build one per stop."""

    def __init__(self, memory: Memory, layout: LocalsLayout):
        self.memory = memory
        self.layout = layout
        self.values = ValueReader(memory, layout.values)
        self._codes: dict = {}

    def _code_slots(self, code: int) -> Tuple[List[int], bytes, int]:
        """``(name pointers, kinds, number of slots)`` of a code object, cached."""
        known = self._codes.get(code)
        if known is None:
            layout = self.layout
            try:
                fields = read_struct(self.memory, code, {
                    "names": (layout.code_names, "Q"), "kinds": (layout.code_kinds, "Q")})
            except MemoryReadError:
                raise ObjectError(f"cannot read the code object at {code:#x}") from None
            names = fields["names"]
            if not names or names % 8:
                raise ObjectError(f"bad co_localsplusnames pointer {names:#x}")
            try:
                count = _signed(self.memory.read_u64(names + layout.tuple_size))
                if not 0 <= count <= 1 << 20:
                    raise ObjectError(f"co_localsplusnames has {count} items")
                slots = min(count, MAX_SLOTS)
                pointers = list(struct.unpack(f"<{slots}Q", self.memory.read(
                    names + layout.tuple_items, 8 * slots))) if slots else []
            except MemoryReadError:
                raise ObjectError(f"cannot read the names of the variables "
                                  f"(co_localsplusnames at {names:#x})") from None
            try:
                kinds = read_bytes(self.memory, layout.values.objects.base,
                                   fields["kinds"])
            except MemoryReadError:
                raise ObjectError(f"cannot read the kinds of the variables "
                                  f"(co_localspluskinds at {fields['kinds']:#x})") from None
            if len(kinds) != count:
                raise ObjectError(f"co_localspluskinds has {len(kinds)} kinds for "
                                  f"{count} names")
            known = self._codes[code] = (pointers, kinds, slots)
        return known

    def frame_locals(self, frame: PyFrame) -> FrameLocals:
        """The bound variables of ``frame``; never raises."""
        if frame.error:
            return FrameLocals(error="its code object is unreadable")
        try:
            names, kinds, slots = self._code_slots(frame.code_address)
        except JitUnwindError as error:
            return FrameLocals(error=str(error))
        start = frame.address + self.layout.frame_localsplus
        data = self.memory.try_read(start, 8 * slots) if slots else b""
        if data is None:
            return FrameLocals(error=f"cannot read the frame's {slots} variables at "
                                     f"{start:#x}")
        variables: List[LocalVariable] = []
        omitted = 0
        for index, word in enumerate(struct.unpack(f"<{slots}Q", data)):
            kind = kinds[index]
            if kind & CO_FAST_HIDDEN:
                continue
            variable = self._variable(names[index], kind, word)
            if variable is None:
                continue
            if len(variables) >= MAX_LOCALS:
                omitted += 1
            else:
                variables.append(variable)
        return FrameLocals(tuple(variables), omitted)

    def _name(self, address: int) -> str:
        try:
            return read_unicode(self.memory, self.layout.values.objects.base, address)
        except JitUnwindError:
            return f"<unreadable name at {address:#x}>"

    def _variable(self, name_address: int, kind: int, word: int
                  ) -> Optional[LocalVariable]:
        """The variable in one slot; None when it is not bound."""
        kind_name = ("free" if kind & CO_FAST_FREE else
                     "cell" if kind & CO_FAST_CELL else "local")
        if word & _TAG_BITS == _INT_TAG:  # 3.14+: a tagged int, no object
            return LocalVariable(self._name(name_address), str(_signed(word) >> 2),
                                 kind_name, "int")
        address = word & ~_TAG_BITS
        if not address:
            return None
        if kind & (CO_FAST_CELL | CO_FAST_FREE):
            try:
                is_cell = self.values.type_name(address) == "cell"
                # a cell argument before MAKE_CELL ran holds the value itself
                address = self.memory.read_u64(address + self.layout.cell_ref) \
                    if is_cell else address
            except JitUnwindError:
                pass  # shown as unreadable below
            if not address:
                return None  # an empty cell: not bound yet
        type_name, text = self.values.render(address)
        return LocalVariable(self._name(name_address), text, kind_name, type_name,
                             address if type_name is not None else None)


def reader_for(runtime) -> Tuple[Optional[LocalsReader], str]:
    """A reader for a :class:`CPythonRuntime`, or None and why."""
    try:
        layout = locals_layout(runtime.memory, runtime.address, runtime.layout)
    except JitUnwindError as error:
        return None, str(error)
    return LocalsReader(runtime.memory, layout), ""


def with_locals(reader: Optional[LocalsReader], thread: PyThread, reason: str = ""
                ) -> PyThread:
    """``thread`` whose frames carry their :class:`FrameLocals` (each with ``reason``
    as its error when there is no reader)."""
    return replace(thread, frames=tuple(
        replace(frame, locals=_frame_locals(reader, frame, reason))
        for frame in thread.frames))


def _frame_locals(reader: Optional[LocalsReader], frame: PyFrame, reason: str
                  ) -> FrameLocals:
    if reader is None:
        return FrameLocals(error=reason)
    try:
        return reader.frame_locals(frame)
    except JitUnwindError as error:  # variables are a bonus: never lose the stack for them
        return FrameLocals(error=f"{type(error).__name__}: {error}")
