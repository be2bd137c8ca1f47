"""The one native step (``unwind/native_step.native_caller``) on recorded memory: each
way a frame's caller is found or the walk ends, as every reader takes it (the fake
process of test_thread_walk: a library with main, helper and leaf, a JIT page, a
stack)."""

from jit_unwind.model import Ending
from jit_unwind.stop.cache import StopCache
from jit_unwind.unwind.native_step import native_caller
from tests.unit.test_thread_walk import (HELPER_RET, JIT_RET, LEAF_RET, MAIN_RET, STACK,
                                         FakeProcess)


def _caller(words, pc, sp, registers, innermost=False, name=lambda _pc: None):
    cache = StopCache(FakeProcess(words))
    caller = native_caller(cache, pc, sp, {"rip": pc, "rsp": sp, **registers}, innermost,
                           name)
    return cache, caller


def test_jit_code_is_unwound_by_the_strategies_and_recorded():
    sp, rbp = STACK + 0x1010, STACK + 0x1040
    cache, caller = _caller({rbp: STACK + 0x2000, rbp + 8: HELPER_RET}, JIT_RET, sp,
                            {"rbp": rbp})
    assert caller.ending is None
    assert (caller.registers["rip"], caller.registers["rsp"]) == (HELPER_RET, rbp + 16)
    assert caller.registers["rbp"] == STACK + 0x2000
    assert cache.unwound[(JIT_RET, sp)] is caller.unwound


def test_a_function_keeping_a_frame_pointer_by_its_frame_record():
    """helper keeps a frame pointer (no .eh_frame is known in the fake process)."""
    sp, rbp = STACK + 0x1050, STACK + 0x1080
    _cache, caller = _caller({rbp: STACK + 0x3000, rbp + 8: MAIN_RET}, HELPER_RET, sp,
                             {"rbp": rbp})
    assert (caller.registers["rip"], caller.registers["rsp"]) == (MAIN_RET, rbp + 16)


def test_main_is_the_outermost_frame():
    _cache, caller = _caller({}, MAIN_RET, STACK + 0x1100, {"rbp": STACK + 0x1200},
                             name=lambda _pc: "main")
    assert caller.ending is Ending.OUTERMOST and caller.registers is None


def test_no_rule_for_a_function_without_frame_pointer_nor_cfi():
    _cache, caller = _caller({}, LEAF_RET, STACK + 0x1100, {"rbp": STACK + 0x1200})
    assert caller.ending is Ending.NO_RULE


def test_a_frame_record_that_cannot_be_read():
    rbp = 0x1234_5678_0000  # no memory there
    _cache, caller = _caller({}, HELPER_RET, STACK + 0x1050, {"rbp": rbp})
    assert caller.ending is Ending.UNREADABLE_RECORD and caller.address == rbp


def test_a_caller_below_its_callee_is_a_corrupt_stack():
    sp, rbp = STACK + 0x1050, STACK + 0x1000  # the frame pointer below the sp
    _cache, caller = _caller({rbp: STACK + 0x3000, rbp + 8: MAIN_RET}, HELPER_RET, sp,
                             {"rbp": rbp})
    assert caller.ending is Ending.INNER and caller.registers is None


def test_a_caller_with_no_return_address():
    """A zero pc (the core reader ends there, as GDB does) and one of 1 to 15 (GDB shows
    it as a frame, LLDB's walk ends with a note) keep their registers."""
    sp, rbp = STACK + 0x1050, STACK + 0x1080
    for pc in (0, 8):
        _cache, caller = _caller({rbp: STACK + 0x3000, rbp + 8: pc}, HELPER_RET, sp,
                                 {"rbp": rbp})
        assert caller.ending is Ending.NO_RETURN_ADDRESS
        assert caller.registers["rip"] == pc


def test_no_registers_no_caller():
    cache = StopCache(FakeProcess({}))
    assert native_caller(cache, None, STACK, {}, True, lambda _pc: None).ending \
        is Ending.NO_REGISTERS
