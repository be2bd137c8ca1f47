"""_Py_DebugOffsets parsing and checking, on blocks built from the field lists.

The values are plausible, not real (real ones: test_cpython_layouts.py and the live
tests); what is tested is that the right field list is chosen, and that anything that
does not fit is refused with a clear message.
"""

import struct

import pytest

from jit_unwind.cpython import CPythonError, LayoutError, PyVersion, find_runtime
from jit_unwind.cpython.debug_offsets import (COOKIE, DEBUG_OFFSETS_LAYOUTS,
                                              layout_from_debug_offsets)
from jit_unwind.cpython.version import as_version, version_from_library_name
from jit_unwind.target import BytesMemory

RUNTIME = 0x7F0000001000

VALUES = {
    "runtime_state": dict(size=300000, finalizing=608, interpreters_head=632),
    "interpreter_state": dict(
        size=200000, id=7272, next=7264, threads_head=7344, threads_main=7352, gc=7400,
        imports_modules=7656, sysdict=7640, builtins=7648, ceval_gil=16,
        gil_runtime_state=7752, gil_runtime_state_enabled=0,
        gil_runtime_state_locked=7768, gil_runtime_state_holder=7760,
        code_object_generation=7776, tlbc_generation=0),
    "thread_state": dict(
        size=880, prev=0, next=8, interp=16, current_frame=72, base_frame=80,
        last_profiled_frame=88, last_profiled_frame_seq=96, thread_id=152,
        native_thread_id=160, datastack_chunk=232, status=32, holds_gil=36,
        gil_requested=40, current_exception=136, exc_state=280),
    "err_stackitem": dict(exc_value=0),
    "interpreter_frame": dict(size=80, previous=8, executable=0, instr_ptr=56,
                              localsplus=80, owner=74, stackpointer=64, tlbc_index=0),
    "code_object": dict(size=208, filename=112, name=120, qualname=128, linetable=136,
                        firstlineno=68, argcount=52, localsplusnames=96,
                        localspluskinds=104, co_code_adaptive=200, co_tlbc=0),
    "pyobject": dict(size=16, ob_type=8),
    "type_object": dict(size=416, tp_name=24, tp_repr=88, tp_flags=168, tp_basicsize=32,
                        tp_dictoffset=288),
    "heap_type_object": dict(size=900, ht_cached_keys=880),
    "tuple_object": dict(size=32, ob_item=24, ob_size=16),
    "list_object": dict(size=40, ob_item=24, ob_size=16),
    "set_object": dict(size=200, used=24, table=40, mask=32),
    "dict_object": dict(size=48, ma_keys=32, ma_values=40),
    "float_object": dict(size=24, ob_fval=16),
    "long_object": dict(size=32, lv_tag=16, ob_digit=24),
    "bytes_object": dict(size=40, ob_size=16, ob_sval=32),
    "unicode_object": dict(size=64, state=32, length=16, asciiobject_size=40,
                           compactunicodeobject_size=56),
    "gc": dict(size=240, collecting=200, frame=208, generation_stats_size=64,
               generation_stats=216),
    "gen_object": dict(size=200, gi_name=24, gi_iframe=80, gi_frame_state=67),
    "llist_node": dict(next=0, prev=8),
    "debugger_support": dict(eval_breaker=24, remote_debugger_support=300,
                             remote_debugging_enabled=1000, debugger_pending_call=0,
                             debugger_script_path=4, debugger_script_path_size=512),
}


def block(version_hex, sections, free_threaded=0, cookie=COOKIE, extra=(), values=VALUES):
    table = values
    values = [version_hex, free_threaded]
    for section, fields in sections:
        values += [table[section][field] for field in fields]
        if section == "thread_state":
            values += list(extra)
    return cookie + struct.pack(f"<{len(values)}Q", *values) + bytes(64)


def memory_with(data, py_version=None):
    segments = {RUNTIME: data}
    if py_version is not None:
        segments[0x1000] = struct.pack("<Q", py_version)
    return BytesMemory(segments)


def lookup(name):
    return {"_PyRuntime": RUNTIME, "Py_Version": 0x1000}.get(name)


CASES = [(0x030D00F0, "3.13"), (0x030E02F0, "3.14"), (0x030F00F0, "3.15 (b4 and later)"),
         (0x030F00B4, "3.15 (b4 and later)"), (0x030F00B2, "3.15 (before b4)")]


@pytest.mark.parametrize("version_hex,label", CASES)
def test_each_field_list_is_recognised(version_hex, label):
    minor = (3, (version_hex >> 16) & 0xFF)
    sections = dict(DEBUG_OFFSETS_LAYOUTS[minor])[label]
    layout = layout_from_debug_offsets(memory_with(block(version_hex, sections)), RUNTIME)
    assert layout.source == f"_Py_DebugOffsets ({label} field list)"
    assert layout.version == PyVersion.from_hex(version_hex)
    assert (layout.tstate_thread_id, layout.tstate_native_thread_id) == (152, 160)
    assert (layout.frame_previous, layout.frame_executable, layout.frame_instr_ptr,
            layout.frame_owner) == (8, 0, 56, 74)
    assert (layout.code_qualname, layout.code_adaptive) == (128, 200)
    assert layout.executable_tag_mask == 7  # tags (3.14+) or alignment bits (3.13)
    assert layout.tstate_holds_gil == (36 if minor == (3, 15) else None)
    assert layout.gil.base == "interp-pointer"
    assert (layout.gil.offset, layout.gil.last_holder, layout.gil.locked) == (16, 8, 16)
    assert not layout.instr_ptr_is_previous


def test_a_field_list_of_the_wrong_length_is_refused():
    sections = dict(DEBUG_OFFSETS_LAYOUTS[(3, 14)])["3.14"]
    data = block(0x030E00F0, sections, extra=[0])  # one more thread_state field
    with pytest.raises(LayoutError) as caught:
        layout_from_debug_offsets(memory_with(data), RUNTIME)
    message = str(caught.value)
    assert message.startswith("the _Py_DebugOffsets of CPython 3.14.0 do not match the "
                              "3.14 layout: ")
    assert "pre-release" not in message


def test_an_unknown_prerelease_layout_says_so():
    sections = dict(DEBUG_OFFSETS_LAYOUTS[(3, 15)])["3.15 (before b4)"]
    data = block(0x030F00A1, sections, extra=[0, 0])
    with pytest.raises(LayoutError, match=r"CPython 3\.15\.0a1 .*pre-release layouts"):
        layout_from_debug_offsets(memory_with(data), RUNTIME)


def test_a_free_threaded_build_is_read_with_its_thread_status_and_bytecode_copies():
    """The same field list; the thread state's _status, 3.14t's tlbc_index and co_tlbc
    (0 in GIL builds) and the GIL's enabled flag (an offset inside the GIL) are used."""
    sections = dict(DEBUG_OFFSETS_LAYOUTS[(3, 14)])["3.14"]
    values = {**VALUES, "interpreter_frame": {**VALUES["interpreter_frame"], "tlbc_index": 72},
              "code_object": {**VALUES["code_object"], "co_tlbc": 192}}
    data = block(0x030E06F0, sections, 1, values=values)
    layout = layout_from_debug_offsets(memory_with(data), RUNTIME)
    assert layout.source == "_Py_DebugOffsets (3.14 field list, free-threaded)"
    assert layout.free_threaded and layout.tstate_status == 32
    assert (layout.frame_tlbc_index, layout.code_tlbc, layout.gil.enabled) == (72, 192, 0)
    plain = layout_from_debug_offsets(memory_with(block(0x030E06F0, sections)), RUNTIME)
    assert not plain.free_threaded and plain.tstate_status is None
    assert (plain.frame_tlbc_index, plain.code_tlbc, plain.gil.enabled) == (None, None, None)


def test_a_newer_version_is_read_when_its_debug_offsets_keep_a_known_shape():
    """No table for 3.16: its offsets are the process's, the shape one we know."""
    sections = dict(DEBUG_OFFSETS_LAYOUTS[(3, 15)])["3.15 (b4 and later)"]
    layout = layout_from_debug_offsets(memory_with(block(0x031000A1, sections)), RUNTIME)
    assert str(layout.version) == "3.16.0a1"
    assert layout.source == "_Py_DebugOffsets (3.15 (b4 and later) field list)"
    assert (layout.tstate_thread_id, layout.frame_owner) == (152, 74)
    # A shape nobody knows yet is refused, and the message says so.
    data = block(0x031000A1, sections, extra=[0, 0, 0])
    with pytest.raises(LayoutError, match=r"CPython 3\.16\.0a1 do not match any field "
                                          r"list jit-unwind knows \(newest: 3\.15\)"):
        layout_from_debug_offsets(memory_with(data), RUNTIME)


def test_cookie_and_version_are_checked():
    sections = dict(DEBUG_OFFSETS_LAYOUTS[(3, 13)])["3.13"]
    good = block(0x030D00F0, sections)
    runtime = find_runtime(memory_with(good, py_version=0x030D00F0), lookup)
    assert str(runtime.version) == "3.13.0"
    # The version is the offsets' own (Py_Version, another symbol look-up, is read only
    # for 3.11/3.12, which have no offsets).
    assert str(find_runtime(memory_with(good), lookup).version) == "3.13.0"
    with pytest.raises(LayoutError, match="Py_Version says CPython 3.12.1 but "
                                          "_Py_DebugOffsets says 3.13.0"):
        layout_from_debug_offsets(memory_with(good, py_version=0x030C01F0), RUNTIME,
                                  PyVersion.from_hex(0x030C01F0))
    bad_cookie = block(0x030D00F0, sections, cookie=b"xdebugpz")
    with pytest.raises(LayoutError, match="does not start with the 'xdebugpy' cookie "
                                          "that CPython 3.13.0 puts there"):
        find_runtime(memory_with(bad_cookie, py_version=0x030D00F0), lookup)
    with pytest.raises(LayoutError, match="impossible version"):
        layout_from_debug_offsets(memory_with(block(0x020700F0, sections)), RUNTIME)
    with pytest.raises(CPythonError, match="cannot read _PyRuntime"):
        find_runtime(BytesMemory({}), lookup)


def test_3_11_and_3_12_come_from_tables():
    memory = memory_with(bytes(64), py_version=0x030B07F0)
    runtime = find_runtime(memory, lookup)
    assert runtime.layout.source == "built-in table for 3.11"
    assert runtime.layout.frame_is_entry == 68 and runtime.layout.instr_ptr_is_previous
    # The caller's hint is used only without Py_Version.
    runtime = find_runtime(memory_with(bytes(64)), lookup, version="3.12")
    assert runtime.layout.source == "built-in table for 3.12"
    assert runtime.threads() == []  # _PyRuntime.interpreters.head is NULL


def test_versions():
    assert str(PyVersion.from_hex(0x030F00A3)) == "3.15.0a3"
    assert str(PyVersion.from_hex(0x030E01C2)) == "3.14.1rc2"
    assert str(PyVersion.from_hex(0x030D00F0)) == "3.13.0"
    assert as_version((3, 10)) == PyVersion(3, 10) == as_version("3.10")
    assert as_version("3.12.1") == PyVersion(3, 12, 1)
    assert version_from_library_name("/usr/lib/libpython3.12.so.1.0") == PyVersion(3, 12)
    assert version_from_library_name("/opt/bin/python3.13t") == PyVersion(3, 13)
    assert version_from_library_name("/usr/bin/gdb") is None
