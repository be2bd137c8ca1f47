"""Each unwind strategy on a recorded stack: bytes we lay out, as a JIT would."""

import struct

from jit_unwind.model import Region
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.target import BytesMemory
from jit_unwind.unwind import UnwindContext, unwind_jit_frame

CODE = 0x7F0000000000        # native code ("the program")
JIT = 0x7F0000100000         # JIT code
STACK = 0x7FFF00000000       # stack mapping
STACK_TOP = STACK + 0x10000
SP = STACK + 0x8000

CALL_RAX = bytes.fromhex("ffd0")
TRAMPOLINE = bytes.fromhex("f30f1efa" "55" "53" "4154" "4155" "4156" "4157" "4883ec08"
                           "4889f8" "4889f7") + CALL_RAX


class Layout:
    """A process image: code bytes, JIT bytes and a stack, all zero-filled."""

    def __init__(self):
        self.code = bytearray(0x1000)
        self.jit = bytearray(0x1000)
        self.stack = bytearray(STACK_TOP - STACK)
        self.symbols = []

    def put_code(self, offset, data):
        self.code[offset:offset + len(data)] = data
        return CODE + offset + len(data)

    def put_jit(self, offset, data):
        self.jit[offset:offset + len(data)] = data
        return JIT + offset + len(data)

    def word(self, address, value):
        struct.pack_into("<Q", self.stack, address - STACK, value)

    def context(self, pc, sp, registers, innermost=False, function_start=None):
        memory = BytesMemory({CODE: bytes(self.code), JIT: bytes(self.jit),
                              STACK: bytes(self.stack)})
        regions = RegionMap([Mapping(CODE, CODE + 0x1000, "r-xp", "/usr/bin/prog"),
                             Mapping(JIT, JIT + 0x1000, "r-xp"),
                             Mapping(STACK, STACK_TOP, "rw-p", "[stack]")],
                            symbols=self.symbols)
        return UnwindContext(pc, sp, memory, regions, registers.get, innermost,
                             function_start)


def native_return_address(layout, offset=0x100):
    """A return address in native code, right after a ``call rax``."""
    return layout.put_code(offset, CALL_RAX)


def test_frame_pointer_rule_follows_rbp():
    layout = Layout()
    ret = native_return_address(layout)
    pc = layout.put_jit(0x40, bytes.fromhex("554889e5") + CALL_RAX)
    rbp = SP + 0x20
    layout.word(rbp, STACK + 0x9000)   # caller's rbp, on the stack
    layout.word(rbp + 8, ret)
    result = unwind_jit_frame(layout.context(pc, SP, {"rbp": rbp, "rbx": 7}))
    assert result.method == "frame-pointer"
    assert (result.caller_pc, result.caller_sp) == (ret, rbp + 16)
    assert result.saved["rbp"] == STACK + 0x9000
    assert result.saved["rbx"] == 7   # the C convention keeps it


def test_known_start_decodes_the_prologue_exactly():
    layout = Layout()
    ret = native_return_address(layout)
    pc = layout.put_jit(0x0, TRAMPOLINE)
    layout.symbols.append(Region(JIT, JIT + 0x40, "perf-map", "enter"))
    entry_sp = SP + 7 * 8
    for index, value in enumerate([11, 12, 13, 14, 15, 16, 17]):
        layout.word(SP + index * 8, value)   # pad, r15, r14, r13, r12, rbx, rbp
    layout.word(entry_sp, ret)
    layout.word(entry_sp - 8, STACK + 0x9000)  # pushed rbp: a stack address
    result = unwind_jit_frame(layout.context(pc, SP, {}))
    assert result.method == "prologue"
    assert (result.caller_pc, result.caller_sp, result.frame_start) == (ret, entry_sp + 8, JIT)
    assert result.saved == {"rbp": STACK + 0x9000, "rbx": 16, "r12": 15, "r13": 14,
                            "r14": 13, "r15": 12}


def test_entry_record_finds_the_trampoline_above_frameless_code():
    layout = Layout()
    ret_into_c = native_return_address(layout)
    # int3 before the trampoline marks where it starts.
    layout.put_jit(0x0, b"\xcc")
    ret_into_trampoline = layout.put_jit(0x1, TRAMPOLINE)
    frameless_pc = layout.put_jit(0x80, bytes.fromhex("4883ec08") + CALL_RAX)
    slot = SP + 8
    layout.word(slot, ret_into_trampoline)
    layout.word(slot + 8 + 7 * 8, ret_into_c)  # the trampoline's own return address
    registers = {"rbp": 0xDEADBEEF}
    result = unwind_jit_frame(layout.context(frameless_pc, SP, registers))
    assert result.method == "entry-record"
    assert (result.caller_pc, result.caller_sp) == (ret_into_trampoline, slot + 8)
    # Code of unknown convention: what it has is passed on (the trampoline restores
    # what it pushed itself), so that a caller whose CFA needs rbp can be unwound.
    assert result.saved == {"rbp": 0xDEADBEEF}
    # A trace (CPython's JIT) keeps no callee-saved register: nothing is passed on.
    layout.symbols.append(Region(JIT + 0x80, JIT + 0x100, "cpython-jit", "t", kind="trace"))
    result = unwind_jit_frame(layout.context(frameless_pc, SP, registers))
    assert result.method == "entry-record" and result.saved == {}


# CPython 3.14's entry shim: push r15, r14, r13, r12, rbx (not rbp); mov r12, rdi;
# mov r13, rsi; mov r14, rdx; call the trace.
SHIM_314 = bytes.fromhex("4157" "4156" "4155" "4154" "53" "4989fc" "4989f5" "4989d6"
                         "e809000000")
# gcc's eval loop: push rbp; mov rbp, rsp; push r15..r12, rbx; sub rsp, 0x298.
EVAL_PROLOGUE = bytes.fromhex("55" "4889e5" "4157" "4156" "4155" "4154" "53" "4881ec98020000")


def _shim_called_by_a_frame_pointer_function(layout):
    """(shim frame pc, its sp, the eval loop's rbp) for a 3.14-style shim that the
    eval loop (sp E at the call) called, itself called from native code."""
    ret_native = native_return_address(layout, 0x100)
    layout.put_code(0x200, EVAL_PROLOGUE)
    ret_eval = layout.put_code(0x240, CALL_RAX)
    layout.symbols.append(Region(JIT, JIT + len(SHIM_314), "cpython-jit", "s", kind="shim"))
    ret_into_shim = layout.put_jit(0, SHIM_314)
    eval_sp = SP + 0x100
    eval_entry_sp = eval_sp + 0x298 + 6 * 8
    layout.word(eval_entry_sp, ret_native)
    layout.word(eval_sp - 8, ret_eval)
    for index, value in enumerate([15, 14, 13, 12, 3]):   # r15 ... rbx
        layout.word(eval_sp - 16 - 8 * index, value)
    return ret_into_shim, eval_sp - 48, eval_entry_sp - 8


def test_a_shim_that_keeps_no_rbp_gets_it_from_the_callers_prologue():
    layout = Layout()
    pc, sp, eval_rbp = _shim_called_by_a_frame_pointer_function(layout)
    start = lambda address: CODE + 0x200 if address >= CODE + 0x200 else None
    result = unwind_jit_frame(layout.context(pc, sp, {}, function_start=start))
    assert result.method == "prologue"
    assert result.saved == {"rbx": 3, "r12": 12, "r13": 13, "r14": 14, "r15": 15,
                            "rbp": eval_rbp}
    # Without a function start for the caller, rbp stays unknown: never a guess.
    result = unwind_jit_frame(layout.context(pc, sp, {}, function_start=lambda a: None))
    assert "rbp" not in result.saved and result.caller_pc is not None


def test_the_callers_frame_must_hold_a_return_address_where_its_prologue_says():
    layout = Layout()
    pc, sp, eval_rbp = _shim_called_by_a_frame_pointer_function(layout)
    layout.word(eval_rbp + 8, 0x1234)   # not a return address: the layout is not that
    start = lambda address: CODE + 0x200
    result = unwind_jit_frame(layout.context(pc, sp, {}, function_start=start))
    assert "rbp" not in result.saved


def test_stack_scan_is_the_last_resort_and_a_guess():
    layout = Layout()
    ret = native_return_address(layout)
    pc = layout.put_jit(0x80, bytes.fromhex("0000") + CALL_RAX)  # undecodable
    layout.word(SP + 0x18, CODE + 0x10)  # a code pointer not after a call: skipped
    layout.word(SP + 0x28, ret)
    result = unwind_jit_frame(layout.context(pc, SP, {"rbp": 0x1234, "rbx": 5}))
    assert result.method == "stack-scan" and result.guess
    assert (result.caller_pc, result.caller_sp) == (ret, SP + 0x30)
    assert result.saved == {"rbp": 0x1234, "rbx": 5}   # GDB can unwind the caller


def _scanned_frame_above_a_pushed_rbp(layout, rbp):
    """A frame found by stack scan whose callee pushed the caller's frame pointer right
    below the return slot (HotSpot's interpreter entry below its call stub), the
    caller's own record [saved rbp, return address] above; ``rbp`` is this frame's."""
    ret = native_return_address(layout)
    outer = native_return_address(layout, 0x200)
    pc = layout.put_jit(0x80, bytes.fromhex("0000") + CALL_RAX)  # undecodable
    caller_rbp = SP + 0x80
    layout.word(SP + 0x20, caller_rbp)   # pushed right below the return slot
    layout.word(SP + 0x28, ret)
    layout.word(caller_rbp, STACK + 0x9000)
    layout.word(caller_rbp + 8, outer)
    return unwind_jit_frame(layout.context(pc, SP, {"rbp": rbp, "rbx": 5})), caller_rbp, pc


def test_stack_scan_takes_the_callers_rbp_pushed_below_its_return_address():
    """This frame's rbp lies below the caller's sp: it cannot be the caller's frame
    pointer (GDB would end the walk, "previous frame inner to this frame")."""
    result, caller_rbp, _ = _scanned_frame_above_a_pushed_rbp(Layout(), SP + 0x10)
    assert result.method == "stack-scan" and result.guess
    assert result.saved == {"rbp": caller_rbp, "rbx": 5}


def test_stack_scan_keeps_an_rbp_that_may_be_the_callers():
    result, _, _ = _scanned_frame_above_a_pushed_rbp(Layout(), SP + 0x100)
    assert result.saved["rbp"] == SP + 0x100


def test_stack_scan_takes_no_pushed_word_that_is_no_frame_pointer():
    layout = Layout()
    result, caller_rbp, pc = _scanned_frame_above_a_pushed_rbp(layout, 0x1234)
    assert result.saved["rbp"] == caller_rbp
    layout.word(caller_rbp + 8, CODE + 0x10)  # no return address above it
    result = unwind_jit_frame(layout.context(pc, SP, {"rbp": 0x1234, "rbx": 5}))
    assert result.saved["rbp"] == 0x1234


def test_nothing_found_ends_the_walk_with_a_reason():
    layout = Layout()
    pc = layout.put_jit(0x80, bytes.fromhex("0000") + CALL_RAX)
    result = unwind_jit_frame(layout.context(pc, SP, {"rbp": 0x1234}))
    assert result.ends_walk and "no strategy" in result.stop_reason


def test_broken_frame_pointer_chain_into_a_frame_pointer_caller_ends_the_walk():
    layout = Layout()
    layout.put_code(0x200, bytes.fromhex("554889e5"))  # the caller keeps a frame pointer
    ret = native_return_address(layout, 0x240)
    pc = layout.put_jit(0x40, bytes.fromhex("554889e5") + CALL_RAX)
    rbp = SP + 0x20
    layout.word(rbp, 0x41414141)
    layout.word(rbp + 8, ret)
    ctx = layout.context(pc, SP, {"rbp": rbp}, function_start=lambda address: CODE + 0x200)
    result = unwind_jit_frame(ctx)
    assert result.ends_walk
    assert "saved rbp 0x41414141" in result.stop_reason


def test_non_stack_rbp_is_fine_when_the_caller_does_not_use_a_frame_pointer():
    layout = Layout()
    layout.put_code(0x200, bytes.fromhex("4883ec08"))  # caller: sub rsp, 8 (no fp)
    ret = native_return_address(layout, 0x240)
    pc = layout.put_jit(0x40, bytes.fromhex("554889e5") + CALL_RAX)
    rbp = SP + 0x20
    layout.word(rbp, 0x41414141)   # rbp holds a plain value in the caller
    layout.word(rbp + 8, ret)
    ctx = layout.context(pc, SP, {"rbp": rbp}, function_start=lambda address: CODE + 0x200)
    result = unwind_jit_frame(ctx)
    assert result.method == "frame-pointer" and result.saved["rbp"] == 0x41414141


def test_unreadable_memory_is_not_an_error():
    layout = Layout()
    pc = layout.put_jit(0x80, CALL_RAX)
    sp = STACK_TOP - 16   # scans run off the end of the stack mapping
    result = unwind_jit_frame(layout.context(pc, sp, {}))
    assert result.ends_walk


# CPython 3.15's _PyJIT_Entry: push rbp; mov rbp, rsp; push r15, r14, r13, r12, rbx, rax;
# ...; call *0x58(%r12); add rsp, 8; pop ...
ENTRY_FUNCTION = bytes.fromhex("55" "4889e5" "4157" "4156" "4155" "4154" "53" "50"
                               "4c89e7" "41ff542458")


def _trace_entered_by_a_native_function(layout):
    """A trace (kind "trace") called by a native function that keeps rbp: (pc, sp,
    rbp, the return address into that function)."""
    ret_eval = native_return_address(layout)
    ret_entry = layout.put_code(0x300, ENTRY_FUNCTION)
    pc = layout.put_jit(0x80, CALL_RAX)
    layout.symbols.append(Region(JIT + 0x40, JIT + 0x400, "cpython-jit", "[jit] f trace",
                                 kind="trace"))
    entry_sp = SP + 0x100           # the entry function's sp at its first byte
    rbp = entry_sp - 8              # after push rbp; mov rbp, rsp
    layout.word(entry_sp, ret_eval)
    layout.word(rbp, STACK + 0x9000)
    slot = entry_sp - 64            # six more pushes, then the call's return slot
    layout.word(slot, ret_entry)
    layout.word(SP + 0x10, ret_eval)   # a stale return address into other code below it
    return pc, SP, rbp, ret_entry, slot


def test_entry_return_finds_the_native_function_that_entered_the_trace():
    from jit_unwind.unwind import unwind_registered_trace
    layout = Layout()
    pc, sp, rbp, ret_entry, slot = _trace_entered_by_a_native_function(layout)
    start = lambda address: CODE + 0x300 if address >= CODE + 0x300 else CODE + 0x100
    ctx = layout.context(pc, sp, {"rbp": rbp, "rbx": 99}, function_start=start)
    result = unwind_registered_trace(ctx)
    assert result.method == "entry-return"
    assert (result.caller_pc, result.caller_sp) == (ret_entry, slot + 8)
    # rbp is the entry function's, nothing else is passed through from a trace.
    assert result.saved == {"rbp": rbp}
    # The full trace plan reaches it as well (no shim in JIT code to find first).
    ctx = layout.context(pc, sp, {"rbp": rbp}, function_start=start)
    assert unwind_jit_frame(ctx).method == "entry-return"


def test_entry_return_needs_rbp_to_be_the_entry_functions_frame():
    from jit_unwind.unwind import unwind_registered_trace
    layout = Layout()
    pc, sp, rbp, _ret, _slot = _trace_entered_by_a_native_function(layout)
    start = lambda address: CODE + 0x300 if address >= CODE + 0x300 else CODE + 0x100
    # A trace that used rbp for data: no exact answer, the debugger's rules stay.
    for wrong in (rbp - 16, rbp + 8, 0x1234):
        ctx = layout.context(pc, sp, {"rbp": wrong}, function_start=start)
        assert unwind_registered_trace(ctx) is None
    # Nor without the function's start (its prologue cannot be decoded).
    ctx = layout.context(pc, sp, {"rbp": rbp}, function_start=lambda a: None)
    assert unwind_registered_trace(ctx) is None


def _planted_chain(layout, above_holds):
    """A JIT frame whose frame record returns to a runtime's planted address (the start
    of a function, no call before it: V8's deoptimizer), under two more records: the
    next also planted, the one after returning after a call when ``above_holds``,
    else into data."""
    planted = CODE + 0x200  # a function's first byte
    layout.put_code(0x1F0, b"\x90" * 16 + bytes.fromhex("554889e5"))
    ret = native_return_address(layout)
    pc = layout.put_jit(0x40, bytes.fromhex("554889e5") + CALL_RAX)
    records = [SP + 0x20, SP + 0x60, SP + 0xA0]
    for record, caller in zip(records, records[1:] + [0]):
        layout.word(record, caller)
    layout.word(records[0] + 8, planted)
    layout.word(records[1] + 8, planted)
    layout.word(records[2] + 8, ret if above_holds else STACK + 0x10)
    return layout.context(pc, SP, {"rbp": records[0]}), planted, records


def test_a_planted_return_address_is_followed_where_the_chain_holds_above_it():
    ctx, planted, records = _planted_chain(Layout(), above_holds=True)
    result = unwind_jit_frame(ctx)
    assert result.method == "frame-pointer"
    assert (result.caller_pc, result.caller_sp) == (planted, records[0] + 16)
    assert result.saved["rbp"] == records[1]


def test_a_planted_return_address_is_refused_where_the_chain_does_not_hold():
    ctx, planted, _ = _planted_chain(Layout(), above_holds=False)
    result = unwind_jit_frame(ctx)
    assert result.method != "frame-pointer"
    assert result.caller_pc != planted


def _scan_over_a_planted_return(layout, above_holds):
    """A frameless JIT frame (C2's) returning to an interpreter's planted return entry
    (no call before it: HotSpot pushes it and jumps), the interpreter's rbp pushed right
    below it; the interpreter's own record returns after a call when ``above_holds``,
    else into data.  Further up, a true return address the scan would take otherwise."""
    planted = layout.put_jit(0x200, b"\x90" * 8)  # after no call
    planted -= 8
    ret, later = native_return_address(layout), native_return_address(layout, 0x300)
    pc = layout.put_jit(0x80, bytes.fromhex("0000") + CALL_RAX)  # undecodable
    interpreter_rbp = SP + 0x80
    layout.word(SP + 0x20, interpreter_rbp)
    layout.word(SP + 0x28, planted)
    layout.word(interpreter_rbp, STACK + 0x9000)
    layout.word(interpreter_rbp + 8, ret if above_holds else STACK + 0x10)
    layout.word(SP + 0x98, later)
    return unwind_jit_frame(layout.context(pc, SP, {"rbp": 0x1234})), planted, interpreter_rbp


def test_stack_scan_takes_a_planted_return_address_where_the_chain_holds_above_it():
    result, planted, interpreter_rbp = _scan_over_a_planted_return(Layout(), True)
    assert result.method == "stack-scan" and result.guess
    assert (result.caller_pc, result.caller_sp) == (planted, SP + 0x30)
    assert result.saved["rbp"] == interpreter_rbp


def test_stack_scan_passes_a_planted_return_address_where_the_chain_does_not_hold():
    result, planted, _ = _scan_over_a_planted_return(Layout(), False)
    assert result.method == "stack-scan" and result.caller_pc != planted


# Modules a walk imports only where it needs them: each one imported is part of the
# first bt's time (~0.1-0.9 ms apiece in GDB 13).
ON_DEMAND = ("jit_unwind.unwind.jitdump_cfi", "jit_unwind.unwind.cfi",
             "jit_unwind.unwind.cfi_rows", "jit_unwind.unwind.trace_entry")

WALK_WITHOUT_JITDUMP = """
import sys
from jit_unwind.unwind import native_step
from tests.unit.test_strategies import (CALL_RAX, JIT, SP, STACK, Layout,
                                         native_return_address)
layout = Layout()
ret = native_return_address(layout)
pc = layout.put_jit(0x40, bytes.fromhex("554889e5") + CALL_RAX)
rbp = SP + 0x20
layout.word(rbp, STACK + 0x9000)
layout.word(rbp + 8, ret)
# Below, a frame found by stack scan whose return address is JIT code: no file's CFI.
scanned = layout.put_jit(0x80, bytes.fromhex("0000") + CALL_RAX)
layout.word(SP - 0x80, pc)
ctx = layout.context(pc, SP, {})
results = [native_step.unwind_jit_code(at, sp, ctx.memory, ctx.regions, registers.get,
                                        False, None, False, lambda: None)
           for at, sp, registers in ((pc, SP, {"rbp": rbp}),
                                     (scanned, SP - 0x88, {"rbp": 0x1234}))]
print([str(result.method.value) for result in results])
print(sorted(name for name in sys.modules if name in MODULES))
"""


def test_a_walk_without_a_jitdump_imports_no_cfi_reader_nor_trace_module():
    """A JIT frame unwound by its frame pointer and one found by a stack scan that meets
    only JIT code (HotSpot, node) import neither a jitdump's CFI rules, the files' CFI
    reader nor CPython's trace module."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    script = WALK_WITHOUT_JITDUMP.replace("MODULES", repr(set(ON_DEMAND)))
    out = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True,
                         text=True, timeout=60,
                         env={"PYTHONPATH": f"{repo / 'plugin'}:{repo}"})
    assert out.returncode == 0, out.stderr
    methods, imported = out.stdout.splitlines()
    assert methods == "['frame-pointer', 'stack-scan']"
    assert imported == "[]"
