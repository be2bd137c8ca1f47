"""Read CPython 3.13+'s ``_Py_DebugOffsets`` and turn it into a :class:`Layout`.

``_PyRuntime`` starts with ``struct _Py_DebugOffsets``: ``char cookie[8]`` (``"xdebugpy"``),
``uint64_t version`` (``PY_VERSION_HEX``), ``uint64_t free_threaded``, then one sub-struct
per C type, each a run of ``uint64_t`` (``size`` first, then field offsets).  The struct
itself changes between minor versions (and between pre-releases), so each version has
its field list here, read from CPython's sources (3.13: ``Include/internal/
pycore_runtime.h``; 3.14+: ``Include/internal/pycore_debug_offsets.h``).  3.13's was also
checked against the DWARF of pyenv's 3.13.0.

The process is the authority on its own layout: every offset comes from it, and
:func:`validate` only checks that the numbers are plausible (each struct's size is sane,
each field fits inside its struct and is aligned for its width, fields do not collide),
never that they equal what some CPython source said.  A field list of the wrong length
fails those checks, because the values slide into the wrong places (a size where an
offset should be).  A version newer than the lists here is read with the newest list
that validates: a release whose ``_Py_DebugOffsets`` kept its shape works as it is.
"""

import struct
from ..records import replace
from typing import Dict, List, Optional, Sequence, Tuple

from ..target import Memory
from .errors import LayoutError, RuntimeNotFoundError
from .layout import GilLayout, Layout
from .version import PyVersion

__all__ = ["COOKIE", "DEBUG_OFFSETS_LAYOUTS", "has_debug_offsets", "read_debug_offsets",
           "validate", "layout_from_debug_offsets"]

COOKIE = b"xdebugpy"

Sections = Sequence[Tuple[str, Sequence[str]]]

_RUNTIME = ("runtime_state", ("size", "finalizing", "interpreters_head"))
_INTERP_313 = ("interpreter_state", (
    "size", "id", "next", "threads_head", "gc", "imports_modules", "sysdict", "builtins",
    "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
    "gil_runtime_state_locked", "gil_runtime_state_holder"))
# 3.14 adds threads_main after threads_head and two generation counters at the end.
_INTERP_314 = ("interpreter_state", (
    "size", "id", "next", "threads_head", "threads_main", "gc", "imports_modules",
    "sysdict", "builtins", "ceval_gil", "gil_runtime_state", "gil_runtime_state_enabled",
    "gil_runtime_state_locked", "gil_runtime_state_holder", "code_object_generation",
    "tlbc_generation"))
_TSTATE_313 = ("thread_state", (
    "size", "prev", "next", "interp", "current_frame", "thread_id", "native_thread_id",
    "datastack_chunk", "status"))


def _tstate_315(with_profiled_seq: bool):
    fields = ["size", "prev", "next", "interp", "current_frame", "base_frame",
              "last_profiled_frame"]
    if with_profiled_seq:  # inserted in 3.15.0b4
        fields.append("last_profiled_frame_seq")
    fields += ["thread_id", "native_thread_id", "datastack_chunk", "status", "holds_gil",
               "gil_requested", "current_exception", "exc_state"]
    return ("thread_state", tuple(fields))


_FRAME_313 = ("interpreter_frame", (
    "size", "previous", "executable", "instr_ptr", "localsplus", "owner"))
_FRAME_314 = ("interpreter_frame", (
    "size", "previous", "executable", "instr_ptr", "localsplus", "owner", "stackpointer",
    "tlbc_index"))
_CODE_313 = ("code_object", (
    "size", "filename", "name", "qualname", "linetable", "firstlineno", "argcount",
    "localsplusnames", "localspluskinds", "co_code_adaptive"))
_CODE_314 = ("code_object", _CODE_313[1] + ("co_tlbc",))
_PYOBJECT = ("pyobject", ("size", "ob_type"))
_TYPE_313 = ("type_object", ("size", "tp_name", "tp_repr", "tp_flags"))
_TYPE_315 = ("type_object", ("size", "tp_name", "tp_repr", "tp_flags", "tp_basicsize",
                             "tp_dictoffset"))
_TUPLE = ("tuple_object", ("size", "ob_item", "ob_size"))
_LIST = ("list_object", ("size", "ob_item", "ob_size"))
_SET = ("set_object", ("size", "used", "table", "mask"))
_DICT = ("dict_object", ("size", "ma_keys", "ma_values"))
_FLOAT = ("float_object", ("size", "ob_fval"))
_LONG = ("long_object", ("size", "lv_tag", "ob_digit"))
_BYTES = ("bytes_object", ("size", "ob_size", "ob_sval"))
_UNICODE_313 = ("unicode_object", ("size", "state", "length", "asciiobject_size"))
_UNICODE_315 = ("unicode_object", _UNICODE_313[1] + ("compactunicodeobject_size",))
_GC_313 = ("gc", ("size", "collecting"))
_GC_315 = ("gc", ("size", "collecting", "frame", "generation_stats_size",
                  "generation_stats"))
_GEN = ("gen_object", ("size", "gi_name", "gi_iframe", "gi_frame_state"))
_LLIST = ("llist_node", ("next", "prev"))
_DEBUGGER = ("debugger_support", (
    "eval_breaker", "remote_debugger_support", "remote_debugging_enabled",
    "debugger_pending_call", "debugger_script_path", "debugger_script_path_size"))

# minor version -> candidate layouts of _Py_DebugOffsets, newest first.  A pre-release
# may match none of them: it then gets a LayoutError, never a guess.
DEBUG_OFFSETS_LAYOUTS: Dict[Tuple[int, int], List[Tuple[str, Sections]]] = {
    (3, 13): [("3.13", [
        _RUNTIME, _INTERP_313, _TSTATE_313, _FRAME_313, _CODE_313, _PYOBJECT, _TYPE_313,
        _TUPLE, _LIST, _DICT, _FLOAT, _LONG, _BYTES, _UNICODE_313, _GC_313])],
    (3, 14): [("3.14", [
        _RUNTIME, _INTERP_314, _TSTATE_313, _FRAME_314, _CODE_314, _PYOBJECT, _TYPE_313,
        _TUPLE, _LIST, _SET, _DICT, _FLOAT, _LONG, _BYTES, _UNICODE_313, _GC_313, _GEN,
        _LLIST, _DEBUGGER])],
    # 3.15 from 3.15.0b4 on (888 bytes, as CPython's Modules/_remote_debugging/
    # debug_offsets_validation.h asserts), then the same before last_profiled_frame_seq.
    (3, 15): [(label, [
        _RUNTIME, _INTERP_314, _tstate_315(seq), ("err_stackitem", ("exc_value",)),
        _FRAME_314, _CODE_314, _PYOBJECT, _TYPE_315, ("heap_type_object",
                                                      ("size", "ht_cached_keys")),
        _TUPLE, _LIST, _SET, _DICT, _FLOAT, _LONG, _BYTES, _UNICODE_315, _GC_315, _GEN,
        _LLIST, _DEBUGGER])
        for label, seq in (("3.15 (b4 and later)", True), ("3.15 (before b4)", False))],
}

DebugOffsets = Dict[str, int]


def has_debug_offsets(memory: Memory, runtime: int) -> bool:
    """Whether ``_PyRuntime`` at ``runtime`` starts with the ``xdebugpy`` cookie."""
    return memory.try_read(runtime, len(COOKIE)) == COOKIE


def debug_offsets_size(sections: Sections) -> int:
    return 8 + 8 * (2 + sum(len(fields) for _, fields in sections))


def read_debug_offsets(memory: Memory, runtime: int, sections: Sections) -> DebugOffsets:
    """``{"version": ..., "free_threaded": ..., "section.field": value}`` read with the
    field list ``sections``; raises :class:`LayoutError` when the cookie is missing."""
    size = debug_offsets_size(sections)
    data = memory.try_read(runtime, size)
    if data is None:
        raise RuntimeNotFoundError(f"cannot read _Py_DebugOffsets ({size} bytes) at "
                                   f"{runtime:#x}")
    if data[:8] != COOKIE:
        raise LayoutError(f"_PyRuntime at {runtime:#x} does not start with the "
                          f"'xdebugpy' cookie of _Py_DebugOffsets")
    values = struct.unpack_from(f"<{(size - 8) // 8}Q", data, 8)
    table = {"version": values[0], "free_threaded": values[1]}
    index = 2
    for section, fields in sections:
        for field in fields:
            table[f"{section}.{field}"] = values[index]
            index += 1
    return table


# The sections and fields the reader uses: section -> (smallest plausible struct size,
# largest, [(field, width in bytes, alignment)]).  Nothing else is assumed of them.
_FIELDS_USED = {
    "runtime_state": (64, 1 << 24, [("interpreters_head", 8, 8)]),
    "interpreter_state": (64, 1 << 24, [("id", 8, 8), ("next", 8, 8),
                                        ("threads_head", 8, 8), ("ceval_gil", 8, 8),
                                        ("gil_runtime_state", 8, 8),
                                        ("gil_runtime_state_locked", 4, 4),
                                        ("gil_runtime_state_holder", 8, 8),
                                        ("imports_modules", 8, 8)]),
    "thread_state": (64, 1 << 16, [("prev", 8, 8), ("next", 8, 8), ("interp", 8, 8),
                                   ("current_frame", 8, 8), ("thread_id", 8, 8),
                                   ("native_thread_id", 8, 8), ("holds_gil", 4, 4)]),
    "interpreter_frame": (32, 512, [("previous", 8, 8), ("executable", 8, 8),
                                    ("instr_ptr", 8, 8), ("owner", 1, 1)]),
    "code_object": (64, 4096, [("filename", 8, 8), ("name", 8, 8), ("qualname", 8, 8),
                               ("linetable", 8, 8), ("firstlineno", 4, 4),
                               ("co_code_adaptive", 2, 2)]),
    "pyobject": (16, 64, [("ob_type", 8, 8)]),
    "type_object": (64, 4096, [("tp_name", 8, 8), ("tp_flags", 8, 8)]),
    "dict_object": (24, 256, [("ma_keys", 8, 8), ("ma_values", 8, 8)]),
    "long_object": (16, 256, [("lv_tag", 8, 8), ("ob_digit", 4, 4)]),
    "bytes_object": (24, 256, [("ob_size", 8, 8), ("ob_sval", 1, 1)]),
    "unicode_object": (24, 256, [("length", 8, 8), ("state", 4, 4),
                                 ("asciiobject_size", 0, 8),
                                 ("compactunicodeobject_size", 0, 8)]),
}

# Fields that are sizes or counts, not offsets into their section's struct.
_NOT_OFFSETS = {"generation_stats_size", "debugger_script_path_size",
                "asciiobject_size", "compactunicodeobject_size"}
# Sections whose first field is not the struct's size.
_NO_SIZE = {"llist_node", "err_stackitem", "debugger_support"}


def _shape_problems(table: DebugOffsets, sections: Sections) -> List[str]:
    """Every section that has a size: the size is sane and each offset lies inside it.
    A field list of the wrong length puts sizes where offsets belong and fails here."""
    problems = []
    for section, fields in sections:
        if section in _NO_SIZE:
            continue
        size = table.get(f"{section}.size", 0)
        if not 8 <= size <= 1 << 24:
            problems.append(f"{section}.size is {size}, not a plausible struct size")
            continue
        for field in fields:
            if field == "size" or field in _NOT_OFFSETS:
                continue
            offset = table[f"{section}.{field}"]
            if offset > size:  # == size: a flexible array member at the end
                problems.append(f"{section}.{field} is {offset}, outside the {size}-byte "
                                f"struct")
    return problems


def validate(table: DebugOffsets, sections: Optional[Sections] = None) -> List[str]:
    """Problems of a parsed ``_Py_DebugOffsets`` (empty when it is plausible).

    Only plausibility: sizes within bounds, fields inside their struct and aligned for
    their width, no two frame fields at one offset.  ``sections`` (the field list the
    table was read with) adds the shape check of every section."""
    problems = _shape_problems(table, sections) if sections is not None else []
    for section, (low, high, fields) in _FIELDS_USED.items():
        size = table.get(f"{section}.size", 0)
        if not low <= size <= high:
            problems.append(f"{section}.size is {size}, expected {low} to {high}")
            continue
        for field, width, alignment in fields:
            key = f"{section}.{field}"
            if key not in table:
                continue
            offset = table[key]
            if offset % alignment or offset + width > size:
                problems.append(f"{key} is {offset}, outside a {size}-byte struct or "
                                f"not {alignment}-aligned")
    if table.get("thread_state.native_thread_id") != table.get("thread_state.thread_id",
                                                                -16) + 8:
        problems.append("thread_state.thread_id and native_thread_id are not adjacent "
                        "unsigned longs")
    frame = [table.get(f"interpreter_frame.{f}") for f in ("previous", "executable",
                                                           "instr_ptr", "owner")]
    if len(set(frame)) != len(frame):
        problems.append(f"interpreter_frame offsets collide: {frame}")
    if table.get("dict_object.ma_values") != table.get("dict_object.ma_keys", -16) + 8:
        problems.append("dict_object.ma_keys and ma_values are not adjacent pointers")
    ascii_size = table.get("unicode_object.asciiobject_size", 0)
    if not table.get("unicode_object.state", 1 << 20) + 4 <= ascii_size:
        problems.append(f"unicode_object.asciiobject_size is {ascii_size}, before the "
                        f"end of its state field")
    return problems


def candidate_field_lists(version: PyVersion) -> List[Tuple[str, Sections]]:
    """The field lists to try for ``version``: its own, then (for a version newer than
    any list here, or a pre-release between lists) every other list, newest first."""
    own = DEBUG_OFFSETS_LAYOUTS.get(version.minor_version, [])
    others = [item for minor in sorted(DEBUG_OFFSETS_LAYOUTS, reverse=True)
              if minor != version.minor_version for item in DEBUG_OFFSETS_LAYOUTS[minor]]
    return list(own) + others


def choose_field_list(memory: Memory, runtime: int, version: PyVersion
                      ) -> Tuple[str, Sections, DebugOffsets]:
    """The first candidate field list whose values are plausible, with its table.
    Raises :class:`LayoutError` naming what did not fit."""
    first_problems: List[str] = []
    for label, sections in candidate_field_lists(version):
        try:
            table = read_debug_offsets(memory, runtime, sections)
        except RuntimeNotFoundError as error:  # a longer list than the memory holds
            first_problems = first_problems or [str(error)]
            continue
        problems = validate(table, sections)
        if not problems:
            return label, sections, table
        first_problems = first_problems or problems
    known = DEBUG_OFFSETS_LAYOUTS.get(version.minor_version)
    shape = (f"the {version.major}.{version.minor} layout" if known
             else "any field list jit-unwind knows (newest: "
                  f"{max(DEBUG_OFFSETS_LAYOUTS)[0]}.{max(DEBUG_OFFSETS_LAYOUTS)[1]})")
    prerelease = "" if version.is_final else " (pre-release layouts change between " \
                                             "alphas and betas)"
    raise LayoutError(f"the _Py_DebugOffsets of CPython {version} do not match "
                      f"{shape}{prerelease}: " + "; ".join(first_problems[:3]))


def layout_from_debug_offsets(memory: Memory, runtime: int,
                              py_version: Optional[PyVersion] = None) -> Layout:
    """The :class:`Layout` described by the ``_Py_DebugOffsets`` at ``runtime``.

    ``py_version`` (from the ``Py_Version`` symbol, when known) must agree with the
    version the offsets carry.  Free-threaded builds (``free_threaded`` set) share the
    field lists; raises :class:`LayoutError` when no field list is plausible."""
    head = memory.try_read(runtime, 24)
    if head is None:
        raise RuntimeNotFoundError(f"cannot read _PyRuntime at {runtime:#x}")
    if head[:8] != COOKIE:
        raise LayoutError(f"_PyRuntime at {runtime:#x} does not start with the "
                          f"'xdebugpy' cookie of _Py_DebugOffsets")
    raw_version, free_threaded = struct.unpack_from("<QQ", head, 8)
    version = PyVersion.from_hex(raw_version)
    if version.major != 3 or version.minor < 13 or raw_version >> 32:
        raise LayoutError(f"_Py_DebugOffsets at {runtime:#x} holds an impossible "
                          f"version {raw_version:#x}")
    if py_version is not None and py_version.minor_version != version.minor_version:
        raise LayoutError(f"Py_Version says CPython {py_version} but _Py_DebugOffsets "
                          f"says {version}")
    label, _sections, table = choose_field_list(memory, runtime, version)
    return _layout(version, label, table, bool(free_threaded))


def _fits(offset: int, width: int, size: int) -> bool:
    """A field of ``width`` bytes at ``offset``, aligned, inside a ``size``-byte struct."""
    return offset % width == 0 and offset + width <= size


def _free_threaded_fields(t: DebugOffsets) -> dict:
    """What a free-threaded build publishes beyond the GIL build's fields: where the
    thread state's ``_status`` is and, 3.14t on, the thread-local bytecode (both offsets
    are 0 in a GIL build, and a free-threaded 3.13 has no such fields)."""
    status = t["thread_state.status"]
    fields = {"free_threaded": True,
              "tstate_status": status if _fits(status, 4, t["thread_state.size"]) else None}
    tlbc_index = t.get("interpreter_frame.tlbc_index")
    tlbc = t.get("code_object.co_tlbc")
    if tlbc_index and tlbc and _fits(tlbc, 8, t["code_object.size"]) \
            and _fits(tlbc_index, 4, t["interpreter_frame.size"]):
        fields.update(frame_tlbc_index=tlbc_index, code_tlbc=tlbc)
    return fields


def _layout(version: PyVersion, label: str, t: DebugOffsets,
            free_threaded: bool = False) -> Layout:
    """Every offset from the table; only what it lacks comes from elsewhere."""
    gil_base = t["interpreter_state.gil_runtime_state"]
    # interp->ceval.gil points at the GIL this interpreter uses (its own _gil, or
    # the main interpreter's when shared); holder/locked are given inside interp->_gil.
    gil: Optional[GilLayout]
    gil = GilLayout(
        "interp-pointer", t["interpreter_state.ceval_gil"],
        t["interpreter_state.gil_runtime_state_holder"] - gil_base,
        t["interpreter_state.gil_runtime_state_locked"] - gil_base)
    if free_threaded:  # gil_runtime_state_enabled: an offset inside the GIL's struct
        enabled = t["interpreter_state.gil_runtime_state_enabled"]
        # (implausible: whether there is a GIL is unknown, so is its holder)
        gil = replace(gil, enabled=enabled) if _fits(enabled, 4, gil.last_holder) else None
    return Layout(
        version=version,
        source=f"_Py_DebugOffsets ({label} field list"
               f"{', free-threaded' if free_threaded else ''})",
        runtime_interpreters_head=t["runtime_state.interpreters_head"],
        interp_next=t["interpreter_state.next"],
        interp_id=t["interpreter_state.id"],
        interp_threads_head=t["interpreter_state.threads_head"],
        gil=gil,
        tstate_next=t["thread_state.next"],
        tstate_interp=t["thread_state.interp"],
        tstate_thread_id=t["thread_state.thread_id"],
        tstate_native_thread_id=t["thread_state.native_thread_id"],
        tstate_frame=t["thread_state.current_frame"],
        cframe_current_frame=None,
        tstate_holds_gil=t.get("thread_state.holds_gil"),
        frame_previous=t["interpreter_frame.previous"],
        frame_executable=t["interpreter_frame.executable"],
        frame_instr_ptr=t["interpreter_frame.instr_ptr"],
        frame_owner=t["interpreter_frame.owner"],
        frame_is_entry=None,
        # 3.14+ keeps f_executable as a _PyStackRef whose low bits are tags; objects are
        # 8-aligned, so clearing them is right for a plain PyObject * (3.13) as well.
        executable_tag_mask=7,
        instr_ptr_is_previous=False,
        code_size=t["tuple_object.ob_size"],  # PyVarObject.ob_size, like any var object
        code_filename=t["code_object.filename"],
        code_name=t["code_object.name"],
        code_qualname=t["code_object.qualname"],
        code_linetable=t["code_object.linetable"],
        code_firstlineno=t["code_object.firstlineno"],
        code_adaptive=t["code_object.co_code_adaptive"],
        unicode_length=t["unicode_object.length"],
        unicode_state=t["unicode_object.state"],
        unicode_ascii_size=t["unicode_object.asciiobject_size"],
        # PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 until 3.15 says so
        unicode_compact_size=t.get("unicode_object.compactunicodeobject_size",
                                   t["unicode_object.asciiobject_size"] + 16),
        bytes_size=t["bytes_object.ob_size"],
        bytes_data=t["bytes_object.ob_sval"],
        ob_type=t["pyobject.ob_type"],
        tp_name=t["type_object.tp_name"],
        debug_offsets=t,
        **(_free_threaded_fields(t) if free_threaded else {}),
    )
