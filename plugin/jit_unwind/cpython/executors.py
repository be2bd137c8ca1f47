"""CPython's JIT executors (3.13+): where each trace's machine code is, and for which code.

With the experimental JIT on (``--enable-experimental-jit``, ``PYTHON_JIT=1``) every
hot loop gets an *executor* (``_PyExecutorObject``, a Python object of type
``uop_executor``) and, for it, one anonymous mmap of machine code::

    jit_code                jit_side_entry                          jit_code + jit_size
    | entry shim (C ABI)    | trace: one stencil per uop, no frame  | data | padding |
      pushes callee-saved     pointer (rbp is a general register);
      registers, calls -->    side exits of other executors jump here

``jit_code`` is page aligned (one ``mmap`` per executor) and ``jit_size`` is a whole
number of pages.  CPython does not store the size of the machine code alone
(``_PyJIT_Compile`` computes ``code_size`` and ``data_size`` and keeps only their
page-rounded sum, and ``_PyExecutorObject.code_size`` counts uops, not bytes), so the
trace region runs to ``jit_code + jit_size`` and includes the data and the padding.

Every executor made by the optimizer is linked into its interpreter's list
(``PyInterpreterState.executor_list_head`` -> ``vm_data.links.next`` -> ...; the head's
``links.previous`` is NULL); ``vm_data.code`` is the ``PyCodeObject *`` whose
``ENTER_EXECUTOR`` runs it (NULL for 3.14+ side-exit executors, which get the code of
the executor whose exit leads to them).  What the list misses: an executor that was
invalidated while one of its traces still runs (unlinked at once, freed only when the
trace returns: 3.13's shim holds a reference), 3.14+'s deletion list, and 3.13's
``COLD_EXITS`` (a static array of 200 one-uop executors, each with its own mmap; read
when the symbol lookup knows the static symbol ``COLD_EXITS``).

Layouts (x86-64, GIL builds):

* 3.13: ``Include/internal/pycore_optimizer.h`` and ``pycore_interp.h`` of CPython
  v3.13.5 (Debian's python3.13 3.13.5 source); checked against the DWARF of that source
  built with ``--enable-experimental-jit=yes-off`` (tests/fixtures/build_cpython.sh;
  ``ptype /o struct _PyExecutorObject``, ``PyInterpreterState``) and of pyenv's 3.13.0
  (no JIT): ``executor_list_head`` is at 0x2f258 in both, right after ``optimizer``
  (``PyInterpreterState`` of 3.13 has no ``_Py_TIER2``/``_Py_JIT`` conditional fields).
* 3.14: ``pycore_optimizer.h`` of the 3.14 branch (python/cpython, the version with
  ``EXECUTOR_DELETE_LIST_MAX`` and ``jit_side_entry``): the executor fields are where
  3.13 has them; ``valid``/``linked`` became bit fields.  Not checked against a binary.
  The offset of ``executor_list_head`` is not in the table (it follows ``types``,
  ``ast`` and other large states): without a DWARF override it is found after
  ``PyObject *common_consts[NUM_COMMON_CONSTANTS]`` (5 entries, the first two are
  ``PyExc_AssertionError`` and ``PyExc_NotImplementedError``, whose addresses come from
  the symbol lookup) and ``bool jit``.
* 3.15 (3.15.0rc2 built with ``--enable-experimental-jit=yes-off``, LLVM 22 stencils;
  ``ptype /o struct _PyExecutorObject``, ``_PyVMData`` and ``PyInterpreterState`` in
  GDB on that build): no list any more.  ``PyInterpreterState`` keeps the executors in
  an array, ``executor_ptrs[executor_count]`` (each executor's
  ``vm_data.bloom_array_idx`` is its index there), invalidated ones waiting to be freed
  in ``executor_deletion_list_head`` (linked by ``vm_data.links``), and two shared
  executors of its own, ``cold_executor`` and ``cold_dynamic_executor``.  These follow
  ``common_consts[12]``, ``bool jit``, ``bool compiling`` and a 16-byte
  ``_PyOptimizationConfig``: ``executor_ptrs`` is 0x80 bytes after ``common_consts``
  (0x368d0 and 0x36850 on that build).  The executor: ``vm_data`` at 32 (``links`` at
  48, ``code`` at 64), ``exit_count`` 72, ``jit_size`` 80, ``jit_code`` 88,
  ``jit_registration`` 96, ``exits`` 104, 120 bytes.  ``jit_side_entry`` is gone: every
  trace is entered through ``_PyJIT_Entry`` (``_Py_jit_entry``), a function of the
  interpreter with its own ``.eh_frame``, so ``jit_code`` is the start of the trace.
  Each compiled executor is also registered through GDB's JIT interface as
  ``py::jit:executor`` (:mod:`jit_unwind.regions.jit_interface`); its ``.eh_frame``
  unwinds the trace straight into the eval loop.

:func:`jit_unwind.regions.cpython_jit.executor_regions` turns executors into
:class:`~jit_unwind.model.Region` objects (that module, not this package, knows the
core's data model).

Offsets from the debugger's DWARF are the truth when there are any: adapters build an
:class:`ExecutorLayout` with :meth:`ExecutorLayout.with_offsets` (field names and the C
members they stand for are in :data:`DWARF_FIELDS`) and pass it to
:func:`read_executors`.

Measured on CPython 3.13.5 built with the JIT (x86-64, LLVM 19 stencils, GCC 12 for the
rest; tests/unit/test_cpython_executors.py checks it on every run): every executor's
shim is the same 112 bytes (0x70, ``trampoline.code_size``), so ``jit_side_entry ==
jit_code + 0x70``::

    +0x00  55 41 57 41 56 41 55 41 54 53 50  push rbp, r15, r14, r13, r12, rbx, rax
    +0x0b  48 89 f5                          mov rbp, rsi
    +0x0e  48 8b 0d <rel32>                  mov rcx, [rip+..]   (the executor, from data)
    +0x15  8b 01 ff c0 74 02 89 01           Py_INCREF(executor) (skipped if immortal)
    +0x1d  49 89 fd 49 89 d4 48 89 14 24     mov r13, rdi; mov r12, rdx; mov [rsp], rdx
    +0x27  90 e8 <rel32>                     nop; call jit_code+0x70 (the trace)
    +0x2d  ...                               previous_executor swap, Py_DECREF,
                                             add rsp, 8; pop x6; ret

(the ``call`` is ``ff 15`` through the data part in the stencil; the JIT relaxes it to
``nop; call rel32``).  So a trace's return address is ``jit_code + 0x2d`` and, there,
the shim has pushed all six callee-saved registers in 56 bytes (``push rax`` only keeps
the stack aligned; its slot holds ``tstate``).  The shim's 24 data bytes live in the data
part after the trace code.  The traces keep no frame pointer (``rbp`` holds the value
stack pointer).

Mappings: each executor is its own ``mmap`` (one to three pages here), the kernel puts
new ones next to earlier ones, and /proc/PID/maps merges neighbours with the same
permissions: in a run with 222 executors (22 traces, 200 cold exits) 217 of the
221 consecutive pairs were adjacent, and one ``r-xp`` mapping held 202 executors.  A
maps region is therefore no executor boundary: only this list tells where each starts.

Nothing here raises on unreadable or inconsistent memory: the list ends and
:attr:`ExecutorList.stop_reason` says why.  Every walk is bounded.
"""

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..target import Memory
from .executor_layout import (DWARF_FIELDS, EXECUTOR_LAYOUTS, Executor, ExecutorLayout,
                              ExecutorList, executor_layout)
from .executor_reader import EXECUTOR_TYPE_NAME, MAX_EXECUTORS, ExecutorReader, RawExecutor
from .runtime import CPythonRuntime, SymbolLookup

__all__ = ["ExecutorLayout", "EXECUTOR_LAYOUTS", "DWARF_FIELDS", "executor_layout",
           "Executor", "ExecutorList", "read_executors", "MAX_EXECUTORS",
           "EXECUTOR_TYPE_NAME"]

def _codes_through_parents(raws: Sequence[RawExecutor], exits: Mapping[int, List[int]]
                           ) -> Dict[int, Tuple[int, Optional[int]]]:
    """executor -> (code object, parent executor it came from or None).  Executors
    without code take their parent's, following side exits from executors with code
    (bounded: each executor is visited once)."""
    result: Dict[int, Tuple[int, Optional[int]]] = {
        raw.address: (raw.code, None) for raw in raws if raw.code}
    pending = [raw.address for raw in raws if raw.code]
    known = {raw.address for raw in raws}
    while pending:
        parent = pending.pop()
        code = result[parent][0]
        for child in exits.get(parent, ()):
            if child in known and child not in result:
                result[child] = (code, parent)
                pending.append(child)
    return result


def read_executors(memory: Memory, runtime: CPythonRuntime,
                   layout: Optional[ExecutorLayout] = None,
                   lookup: Optional[SymbolLookup] = None,
                   max_executors: int = MAX_EXECUTORS) -> ExecutorList:
    """Every executor with machine code, of every interpreter of ``runtime``
    (a :class:`~.runtime.CPythonRuntime`), sorted by ``jit_code``.

    ``layout`` overrides the built-in table (e.g. offsets from DWARF).  ``lookup``
    (``name -> address or None``) finds 3.13's ``COLD_EXITS`` and, for 3.14+ without
    DWARF, ``PyExc_AssertionError``/``PyExc_NotImplementedError``.  Never raises for
    unreadable or inconsistent memory: the result's ``stop_reason`` says what ended a
    list.  Raises :class:`UnsupportedVersionError` for versions without executors."""
    if layout is None:
        layout = executor_layout(runtime.version)
    reader = ExecutorReader(memory, runtime, layout, lookup, max_executors)
    reasons: List[str] = []
    interps, reason = runtime.interpreter_addresses()
    if reason:
        reasons.append(reason)
    raws: List[Tuple[RawExecutor, int]] = []
    skipped = 0
    heads = []
    named: List[Tuple[str, RawExecutor, int]] = []  # 3.15's cold executors
    for interp in interps:
        if layout.uses_array:
            from .executor_array import array_fields, walk_array
            fields, reason = array_fields(reader, interp)
            if fields is None:
                if reason:
                    reasons.append(reason)
                continue
            heads.append((interp, fields[0]))
            found, cold_here, skipped_here, reason = walk_array(
                reader, interp, fields, max_executors - len(raws))
            raws.extend((raw, interp) for raw in found)
            named.extend((name, raw, interp) for name, raw in cold_here)
            skipped += skipped_here
            if reason:
                reasons.append(reason)
            continue
        offset, reason = reader.list_head_offset(interp)
        if offset is None:
            reasons.append(reason)
            continue
        heads.append((interp, offset))
        found, skipped_here, reason = reader.walk(interp, offset, max_executors - len(raws))
        raws.extend((raw, interp) for raw in found)
        skipped += skipped_here
        if reason:
            reasons.append(reason)
    exits = {raw.address: reader.exit_targets(raw) for raw, _ in raws}
    codes = _codes_through_parents([raw for raw, _ in raws], exits)
    executors = []
    for raw, interp in raws:
        code, parent = codes.get(raw.address, (0, None))
        executors.append(reader.executor(raw, interp, code, "trace", parent))
    cold, reason = reader.cold_exits()
    if reason:
        reasons.append(reason)
    main = interps[0] if interps else 0
    for index, raw in cold:
        executors.append(reader.executor(raw, main, 0, "cold-exit", None,
                                         name=f"<cold exit {index}>"))
    for name, raw, interp in named:
        executors.append(reader.executor(raw, interp, 0, "cold-exit", None, name=name))
    executors.sort(key=lambda e: e.jit_code)
    return ExecutorList(tuple(executors), "; ".join(reasons), skipped, tuple(heads))

