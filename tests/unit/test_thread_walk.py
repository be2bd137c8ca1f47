"""The core's walk through JIT code (``thread_walk``) over a fake debugger: its input
frames, symbols and memory are laid out here, no debugger runs."""

import contextlib
import struct

from jit_unwind.debugger import Frame, Process, Symbol
from jit_unwind.regions import Mapping
from jit_unwind.stop.cache import StopCache
from jit_unwind.target import BytesMemory
from jit_unwind.stack.thread_walk import ThreadWalk

LIB = 0x4000_0000
JIT = 0x7000_0000
STACK = 0x7FFF_0000
NO_SUCH_PID = 2 ** 22 + 19  # above pid_max: no /tmp/perf-PID.map

CALL_RAX = bytes.fromhex("ffd0")
PUSH_RBP_MOV_RBP_RSP = bytes.fromhex("554889e5")

# The program: main calls helper (keeps a frame pointer), helper calls JIT code (keeps
# one too), which calls leaf.
MAIN, HELPER, LEAF = LIB + 0x100, LIB + 0x200, LIB + 0x300
MAIN_RET = MAIN + len(CALL_RAX)
HELPER_RET = HELPER + len(PUSH_RBP_MOV_RBP_RSP) + len(CALL_RAX)
JIT_RET = JIT + len(PUSH_RBP_MOV_RBP_RSP) + len(CALL_RAX)
LEAF_RET = LEAF + 0x10  # leaf calls too, after code that keeps no frame pointer
SYMBOLS = [Symbol("main", MAIN, MAIN + 0x100), Symbol("helper", HELPER, HELPER + 0x100),
           Symbol("leaf", LEAF, LEAF + 0x100)]


class InputFrame(Frame):
    """One of the debugger's own frames."""

    def __init__(self, level, pc, sp, **registers):
        self._level, self._pc, self._sp = level, pc, sp
        self.registers = {"rip": pc, "rsp": sp, **registers}

    level = property(lambda self: self._level)

    def pc(self):
        return self._pc

    def sp(self):
        return self._sp

    def register(self, name):
        return self.registers.get(name)


class FakeProcess(Process):
    debugger_name = "FakeDB"

    def __init__(self, stack_words):
        code = bytearray(0x1000)
        code[MAIN - LIB:MAIN_RET - LIB] = CALL_RAX
        code[HELPER - LIB:HELPER_RET - LIB] = PUSH_RBP_MOV_RBP_RSP + CALL_RAX
        code[LEAF_RET - len(CALL_RAX) - LIB:LEAF_RET - LIB] = CALL_RAX
        stack = bytearray(0x10000)
        for address, value in stack_words.items():
            struct.pack_into("<Q", stack, address - STACK, value)
        self.memory = BytesMemory({LIB: bytes(code),
                                   JIT: PUSH_RBP_MOV_RBP_RSP + CALL_RAX + bytes(0xFF8),
                                   STACK: bytes(stack)})

    def pid(self):
        return NO_SUCH_PID

    def key(self):
        return (1, NO_SUCH_PID)

    def connection(self):
        return "remote"

    def core_file(self):
        return None

    def debugger_mappings(self):
        return [Mapping(LIB, LIB + 0x1000, "r-xp", "/usr/lib/libapp.so"),
                Mapping(JIT, JIT + 0x1000, "rwxp", ""),
                Mapping(STACK, STACK + 0x10000, "rw-p", "[stack]")]

    def module_paths(self):
        return []

    def threads(self):
        return []

    def selected_thread(self):
        return None

    def symbol_address(self, name):
        return None

    def member_offset(self, type_name, member_path):
        return None

    def symbol_at(self, address):
        return next((symbol for symbol in SYMBOLS
                     if symbol.start <= address < symbol.end), None)

    def function_start(self, address):
        symbol = self.symbol_at(address)
        return symbol.start if symbol is not None else None

    def keep_selection(self):
        return contextlib.nullcontext()


def _walk(stack_words, inputs, past_native_end=False):
    cache = StopCache(FakeProcess(stack_words))
    return cache, ThreadWalk(cache, inputs, past_native_end=past_native_end).run()


def _shape(steps):
    """Each step as (input index) or ("jit"/"native", pc) or ("note", text)."""
    shape = []
    for step in steps:
        if step.index is not None:
            shape.append(step.index)
        elif step.pc is None:
            shape.append(("note", step.note))
        else:
            shape.append(("jit" if step.jit else "native", step.pc))
    return shape


def test_rejoins_the_debuggers_frames_after_a_jit_frame():
    """The debugger unwound the JIT frame wrongly (frame 2); the walk unwinds it by its
    frame pointer and goes on with the debugger's frame where pc and sp match (3)."""
    jit_sp, rbp = STACK + 0x1010, STACK + 0x1040
    inputs = [InputFrame(0, LEAF, STACK + 0x1000),
              InputFrame(1, JIT_RET, jit_sp, rbp=rbp),
              InputFrame(2, LIB + 0x800, STACK + 0x1020),  # no function there
              InputFrame(3, MAIN_RET, rbp + 16)]
    cache, steps = _walk({rbp: STACK + 0x2000, rbp + 8: MAIN_RET}, inputs)
    assert _shape(steps) == [0, ("jit", JIT_RET), 3]
    unwound = cache.unwound[(JIT_RET, jit_sp)]
    assert (unwound.caller_pc, unwound.caller_sp) == (MAIN_RET, rbp + 16)
    assert steps[1].registers["rbp"] == rbp


def test_walks_native_callers_the_debugger_lost_and_stops_at_main():
    """The debugger's frames end at the JIT frame: the walk unwinds it, then helper (by
    its frame pointer, no .eh_frame known) and ends at main, with no note."""
    jit_sp, jit_rbp, helper_rbp = STACK + 0x1010, STACK + 0x1040, STACK + 0x1080
    words = {jit_rbp: helper_rbp, jit_rbp + 8: HELPER_RET,
             helper_rbp: STACK + 0x3000, helper_rbp + 8: MAIN_RET,
             helper_rbp + 16: 0xDEAD}  # main's frame: never read as a caller
    inputs = [InputFrame(0, LEAF, STACK + 0x1000),
              InputFrame(1, JIT_RET, jit_sp, rbp=jit_rbp)]
    cache, steps = _walk(words, inputs)
    assert _shape(steps) == [0, ("jit", JIT_RET), ("native", HELPER_RET),
                             ("native", MAIN_RET)]
    assert steps[2].sp == jit_rbp + 16
    assert steps[3].sp == helper_rbp + 16
    assert not cache.debugger_stops


def test_keeps_the_debuggers_main_where_its_sp_differs():
    """A program has one main: the debugger's main frame (and its callers) are kept
    even where the sp the walk found for it is not the debugger's."""
    jit_sp, rbp = STACK + 0x1010, STACK + 0x1040
    inputs = [InputFrame(0, LEAF, STACK + 0x1000),
              InputFrame(1, JIT_RET, jit_sp, rbp=rbp),
              InputFrame(2, MAIN_RET, rbp + 0x100),
              InputFrame(3, LIB + 0x900, rbp + 0x200)]
    _cache, steps = _walk({rbp: STACK + 0x2000, rbp + 8: MAIN_RET}, inputs)
    assert _shape(steps) == [0, ("jit", JIT_RET), 2, 3]


def test_a_native_caller_without_frame_pointer_ends_the_walk_with_a_reason():
    jit_sp, rbp = STACK + 0x1010, STACK + 0x1040
    leaf_ret = LEAF_RET
    inputs = [InputFrame(0, LEAF, STACK + 0x1000),
              InputFrame(1, JIT_RET, jit_sp, rbp=rbp)]
    cache, steps = _walk({rbp: STACK + 0x2000, rbp + 8: leaf_ret}, inputs)
    reason = ("leaf keeps no frame pointer and FakeDB cannot unwind it from registers "
              "found through JIT code")
    assert _shape(steps) == [0, ("jit", JIT_RET), ("native", leaf_ret), ("note", reason)]
    assert cache.debugger_stops == {(leaf_ret, rbp + 16): reason}
