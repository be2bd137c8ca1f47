"""The layouts against the DWARF of pyenv's shared-library builds.

3.11 and 3.12 use built-in tables; 3.13 builds its layout from the _Py_DebugOffsets
initialiser stored in libpython's .PyRuntime section.  GDB evaluates the C expression
of each offset in the library's debug info; both must agree.  (3.14 and 3.15 have no
build here: their field lists are checked by reading CPython's sources only.)
"""

import re
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.cpython.debug_offsets import layout_from_debug_offsets
from jit_unwind.cpython.layout import ENTRY_SHIM_OWNER, static_layout
from jit_unwind.cpython.version import PyVersion
from jit_unwind.target import BytesMemory
from tests.support import GDB_BINARIES, pyenv_python

RT, IS, TS = "struct pyruntimestate", "struct _is", "struct _ts"
FRAME, CODE = "struct _PyInterpreterFrame", "PyCodeObject"


def offset(type_name, member):
    return f"(long)&(({type_name} *)0)->{member}"


def expressions(minor):
    """Layout attribute -> C expression of its offset (for this minor version)."""
    exprs = {
        "runtime_interpreters_head": offset(RT, "interpreters.head"),
        "interp_next": offset(IS, "next"),
        "interp_id": offset(IS, "id"),
        "interp_threads_head": offset(IS, "threads.head"),
        "gil.last_holder": offset("struct _gil_runtime_state", "last_holder"),
        "gil.locked": offset("struct _gil_runtime_state", "locked"),
        "tstate_next": offset(TS, "next"),
        "tstate_interp": offset(TS, "interp"),
        "tstate_thread_id": offset(TS, "thread_id"),
        "tstate_native_thread_id": offset(TS, "native_thread_id"),
        "frame_previous": offset(FRAME, "previous"),
        "frame_owner": offset(FRAME, "owner"),
        "code_size": offset("PyVarObject", "ob_size"),
        "code_filename": offset(CODE, "co_filename"),
        "code_name": offset(CODE, "co_name"),
        "code_qualname": offset(CODE, "co_qualname"),
        "code_linetable": offset(CODE, "co_linetable"),
        "code_firstlineno": offset(CODE, "co_firstlineno"),
        "code_adaptive": offset(CODE, "co_code_adaptive"),
        "unicode_length": offset("PyASCIIObject", "length"),
        "unicode_state": offset("PyASCIIObject", "state"),
        "unicode_ascii_size": "(long)sizeof(PyASCIIObject)",
        "unicode_compact_size": "(long)sizeof(PyCompactUnicodeObject)",
        "bytes_size": offset("PyBytesObject", "ob_base.ob_size"),
        "bytes_data": offset("PyBytesObject", "ob_sval"),
        "ob_type": offset("PyObject", "ob_type"),
        "tp_name": offset("PyTypeObject", "tp_name"),
    }
    if minor == 11:
        exprs["gil.offset"] = offset(RT, "ceval.gil")
        exprs["frame_is_entry"] = offset(FRAME, "is_entry")
    else:
        exprs["gil.offset"] = offset(IS, "ceval.gil")
        exprs["entry_owner"] = "(long)FRAME_OWNED_BY_CSTACK"
    if minor <= 12:
        exprs["tstate_frame"] = offset(TS, "cframe")
        exprs["cframe_current_frame"] = offset("_PyCFrame", "current_frame")
        exprs["frame_executable"] = offset(FRAME, "f_code")
        exprs["frame_instr_ptr"] = offset(FRAME, "prev_instr")
    else:
        exprs["tstate_frame"] = offset(TS, "current_frame")
        exprs["frame_executable"] = offset(FRAME, "f_executable")
        exprs["frame_instr_ptr"] = offset(FRAME, "instr_ptr")
    return exprs


def dwarf_values(library, exprs):
    gdb = GDB_BINARIES["gdb18"] if GDB_BINARIES["gdb18"].exists() else GDB_BINARIES["gdb13"]
    argv = [str(gdb), "-nx", "-batch", "-iex", "set debuginfod enabled off"]
    for name, expr in exprs.items():
        argv += ["-ex", f'printf "{name}=%ld\\n", {expr}']
    output = subprocess.run(argv + [str(library)], capture_output=True, text=True, errors="replace",
                            timeout=120).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^([\w.]+)=(-?\d+)$", output,
                                                             re.M)}


def libpython(version):
    minor = ".".join(version.split(".")[:2])
    return pyenv_python(version).parent.parent / "lib" / f"libpython{minor}.so.1.0"


def layout_value(layout, name):
    if name == "entry_owner":
        return ENTRY_SHIM_OWNER
    if name.startswith("gil."):
        return getattr(layout.gil, name[4:])
    return getattr(layout, name)


def layout_from_file(library):
    with open(library, "rb") as handle:
        section = ELFFile(handle).get_section_by_name(".PyRuntime")
        return layout_from_debug_offsets(BytesMemory({section["sh_addr"]: section.data()}),
                                         section["sh_addr"])


@pytest.mark.parametrize("version", ["3.11.7", "3.12.1", "3.13.0"])
def test_layout_matches_dwarf(version):
    minor = int(version.split(".")[1])
    library = libpython(version)
    if minor <= 12:
        layout = static_layout(PyVersion(3, minor, int(version.split(".")[2])))
    else:
        layout = layout_from_file(library)
        assert str(layout.version) == version
    exprs = expressions(minor)
    dwarf = dwarf_values(library, exprs)
    assert sorted(dwarf) == sorted(exprs), "GDB could not evaluate some expressions"
    mine = {name: layout_value(layout, name) for name in exprs}
    assert mine == dwarf
