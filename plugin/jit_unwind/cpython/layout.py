"""Where the fields the reader needs live, per CPython version (x86-64).

A :class:`Layout` holds byte offsets into these C types:

* ``_PyRuntimeState`` (the global ``_PyRuntime``): ``interpreters.head``
* ``PyInterpreterState``: ``next``, ``id``, ``threads.head``, the GIL
  (``struct _gil_runtime_state``: ``last_holder``, ``locked``)
* ``PyThreadState``: ``next``, ``interp``, ``thread_id``, ``native_thread_id``, the current
  frame (3.11/3.12: ``cframe->current_frame``; 3.13+: ``current_frame``)
* ``_PyInterpreterFrame``: ``previous``, the executable (3.11/3.12 ``f_code``; 3.13
  ``f_executable``; 3.14+ ``f_executable`` as a tagged ``_PyStackRef``), the instruction
  pointer (3.11/3.12 ``prev_instr``: last executed; 3.13+ ``instr_ptr``: current), ``owner``
  and 3.11's ``is_entry``
* ``PyCodeObject``: ``co_filename``, ``co_name``, ``co_qualname``, ``co_linetable``,
  ``co_firstlineno``, ``co_code_adaptive``
* ``PyASCIIObject``/``PyCompactUnicodeObject``, ``PyBytesObject``, ``PyObject.ob_type``,
  ``PyTypeObject.tp_name``

3.11 and 3.12 have no ``_Py_DebugOffsets``: :func:`static_layout` returns tables measured
from the DWARF of pyenv's 3.11.7 and 3.12.1 (``ptype /o``).  3.13+ layouts are built from
the inferior's own ``_Py_DebugOffsets`` by :mod:`.debug_offsets`.
"""

from ..records import field, record
from typing import Any, Dict, Optional, Tuple

from .errors import UnsupportedVersionError
from .version import PyVersion

__all__ = ["Layout", "GilLayout", "SUPPORTED_MINORS", "check_supported", "static_layout"]

SUPPORTED_MINORS = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))

# enum _frameowner: 0 thread, 1 generator, 2 frame object in every version; 3.12/3.13
# add FRAME_OWNED_BY_CSTACK = 3 (the shim frame each _PyEval_EvalFrameDefault call
# pushes), 3.14 renames it FRAME_OWNED_BY_INTERPRETER = 3 and adds 4 (FRAME_OWNED_BY_CSTACK
# in 3.14, the thread state's sentinel base frame in 3.15).  Owners >= 3 are not Python.
OWNER_NAMES = {0: "thread", 1: "generator", 2: "frame-object"}
FIRST_SHIM_OWNER = 3
ENTRY_SHIM_OWNER = 3


@record(frozen=True)
class GilLayout:
    """Where ``struct _gil_runtime_state {unsigned long interval; PyThreadState
    *last_holder; int locked; ...}`` is.

    ``base`` is ``"runtime"`` (3.11: inside ``_PyRuntime.ceval.gil``, at ``offset``) or
    ``"interp-pointer"`` (3.12+: ``PyInterpreterState.ceval.gil`` is a pointer to it,
    stored at ``offset``).  ``last_holder``/``locked`` are offsets inside the struct."""

    base: str
    offset: int
    last_holder: int
    locked: int
    # free-threaded builds: ``int enabled`` inside the struct (0: the GIL is disabled,
    # the usual case; else it was turned on, e.g. by PYTHON_GIL=1 or an old extension)
    enabled: Optional[int] = None


@record(frozen=True)
class Layout:
    """Where the runtime's, interpreters', threads', frames' and code objects' fields
    are, for one CPython version and build."""

    version: PyVersion
    source: str  # where the offsets come from, for messages

    runtime_interpreters_head: int

    interp_next: int
    interp_id: int
    interp_threads_head: int
    gil: Optional[GilLayout]

    tstate_next: int
    tstate_interp: int
    tstate_thread_id: int
    tstate_native_thread_id: int
    # 3.13+: offset of ``current_frame``.  3.11/3.12: offset of ``cframe`` (a
    # ``_PyCFrame *``) and ``cframe_current_frame`` is the offset inside ``_PyCFrame``.
    tstate_frame: int
    cframe_current_frame: Optional[int]
    tstate_holds_gil: Optional[int]  # 3.15+: ``int holds_gil`` published by debug offsets

    frame_previous: int
    frame_executable: int
    frame_instr_ptr: int
    frame_owner: int
    frame_is_entry: Optional[int]  # 3.11 only: ``bool is_entry``
    executable_tag_mask: int       # 3.14+: _PyStackRef low bits are tags
    instr_ptr_is_previous: bool    # 3.11/3.12 ``prev_instr``: the last executed instruction

    code_size: int  # PyVarObject.ob_size: number of _Py_CODEUNITs
    code_filename: int
    code_name: int
    code_qualname: int
    code_linetable: int
    code_firstlineno: int
    code_adaptive: int

    unicode_length: int
    unicode_state: int
    unicode_ascii_size: int    # sizeof(PyASCIIObject): data of compact ASCII strings
    unicode_compact_size: int  # sizeof(PyCompactUnicodeObject): data of other compact ones

    bytes_size: int
    bytes_data: int

    ob_type: int = 8
    tp_name: int = 24
    # Free-threaded builds (3.13t+): ``PyThreadState._status`` (a bit field whose bit 4,
    # ``active``, is set while the thread is attached) and 3.14t's thread-local bytecode:
    # ``_PyInterpreterFrame.tlbc_index`` picks ``co_tlbc->entries[index]``, the copy of
    # the bytecode that ``instr_ptr`` points into.
    free_threaded: bool = False
    tstate_status: Optional[int] = None
    frame_tlbc_index: Optional[int] = None
    code_tlbc: Optional[int] = None
    # 3.13+: the whole parsed _Py_DebugOffsets ("section.field" -> value), for readers
    # of other objects (dicts, modules) that take their offsets from it too.
    debug_offsets: Optional[Dict[str, int]] = field(default=None, compare=False,
                                                    repr=False)


def check_supported(version: PyVersion) -> None:
    """Raise :class:`UnsupportedVersionError` for CPython before 3.11 (no layout we
    can read: 3.10's frames are PyFrameObjects).  Newer versions are read through their
    ``_Py_DebugOffsets`` when its shape is one we know."""
    if version.minor_version < SUPPORTED_MINORS[0] or version.major != 3:
        first = SUPPORTED_MINORS[0]
        raise UnsupportedVersionError(
            f"CPython {version} is not supported "
            f"(jit-unwind reads CPython {first[0]}.{first[1]} and newer)")


# Measured with `gdb -batch -ex 'ptype /o struct _PyInterpreterFrame' libpython3.11.so`
# (and struct _ts, _PyCFrame, PyCodeObject, PyASCIIObject, pyruntimestate, _is,
# _gil_runtime_state) on pyenv's 3.11.7 and 3.12.1.
_COMMON_311_312 = dict(
    runtime_interpreters_head=40,   # _PyRuntimeState.interpreters.head
    interp_next=0,                  # PyInterpreterState.next
    tstate_next=8,                  # PyThreadState.next
    tstate_interp=16,               # PyThreadState.interp
    tstate_frame=56,                # PyThreadState.cframe (_PyCFrame *)
    tstate_holds_gil=None,
    frame_instr_ptr=56,             # _PyInterpreterFrame.prev_instr
    executable_tag_mask=0,
    instr_ptr_is_previous=True,
    code_size=16,                   # PyVarObject.ob_size
    code_filename=112, code_name=120, code_qualname=128, code_linetable=136,
    unicode_length=16, unicode_state=32,
    bytes_size=16, bytes_data=32,
)

# Layout's keyword arguments by version (values of several types).
_STATIC: Dict[Tuple[int, int], Dict[str, Any]] = {
    (3, 11): dict(
        _COMMON_311_312,
        interp_id=48,                   # PyInterpreterState.id (int64_t)
        interp_threads_head=16,         # PyInterpreterState.threads.head
        # _PyRuntime.ceval.gil: interval at 360, last_holder at 368, locked at 376
        gil=GilLayout("runtime", 360, 8, 16),
        tstate_thread_id=152, tstate_native_thread_id=160,
        cframe_current_frame=8,         # _PyCFrame {uint8_t use_tracing; current_frame; ...}
        frame_previous=48, frame_executable=32,  # previous, f_code
        frame_owner=69, frame_is_entry=68,
        code_firstlineno=72, code_adaptive=184,
        unicode_ascii_size=48, unicode_compact_size=72,  # 3.11 still has wstr
    ),
    (3, 12): dict(
        _COMMON_311_312,
        interp_id=8,
        interp_threads_head=72,
        gil=GilLayout("interp-pointer", 384, 8, 16),  # interp->ceval.gil
        tstate_thread_id=136, tstate_native_thread_id=144,
        cframe_current_frame=0,         # _PyCFrame {current_frame; previous}
        frame_previous=8, frame_executable=0,    # f_code moved to the front
        frame_owner=70, frame_is_entry=None,     # is_entry replaced by shim frames
        code_firstlineno=68, code_adaptive=192,
        unicode_ascii_size=40, unicode_compact_size=56,
    ),
}


def static_layout(version: PyVersion) -> Layout:
    """The built-in layout of CPython 3.11 or 3.12 (no ``_Py_DebugOffsets`` there)."""
    check_supported(version)
    fields = _STATIC.get(version.minor_version)
    if fields is None:
        raise UnsupportedVersionError(
            f"CPython {version} keeps its layout in _Py_DebugOffsets, not in a table")
    return Layout(version=version,
                  source=f"built-in table for {version.major}.{version.minor}", **fields)
