"""What GDB's unwinder asks the core about one frame (native_step.leaves_to_debugger,
unwind_code), over a fake process: no debugger."""

from jit_unwind.unwind.native_step import leaves_to_debugger, unwind_code
from jit_unwind.model import Region
from jit_unwind.stop.cache import StopCache
from jit_unwind.target import BytesMemory

from .test_session import JIT_START, LIB_START, STACK, FakeProcess

JIT_PC = JIT_START + 0x10


def _zeroed_stack() -> FakeProcess:
    """A process whose stack reads as zeros (no return address on it) and whose JIT
    code cannot be read."""
    process = FakeProcess()
    process.memory = BytesMemory({STACK: bytes(0x10000)})
    return process


def test_our_unwind_of_jit_code_is_recorded_for_bt():
    """Unreadable code, a stack of zeros: no strategy finds a caller, and the walk's
    end (with its reason) is what bt marks."""
    cache = StopCache(_zeroed_stack())
    code = cache.regions().code_at(JIT_PC)
    assert code is not None and not leaves_to_debugger(cache, code, JIT_PC)
    registers = {"rbp": STACK + 0x100, "rsp": STACK + 0xF0, "rip": JIT_PC}
    result = unwind_code(cache, code, JIT_PC, STACK + 0xF0, registers.__getitem__,
                         True, lambda: None)
    assert result is not None and result.ends_walk and result.stop_reason
    assert cache.unwound_at(JIT_PC, lambda: STACK + 0xF0) is result
    assert JIT_PC in cache.unwound_pcs


def test_a_frame_whose_stack_cannot_be_read_is_left_to_the_debugger():
    """No strategy finds the caller and sp points at no readable memory (GDB's
    jit-reader.exp mangles rsp): GDB's own rules fail the same way and say so ("Cannot
    access memory at address SP"); ending the walk would be ours, so it is GDB's."""
    cache = StopCache(FakeProcess())
    code = cache.regions().code_at(JIT_PC)
    registers = {"rbp": STACK + 0x100, "rsp": STACK + 0xF0, "rip": JIT_PC}
    assert unwind_code(cache, code, JIT_PC, STACK + 0xF0, registers.__getitem__,
                       True, lambda: None) is None
    assert JIT_PC not in cache.unwound_pcs


def test_the_same_frame_again_this_stop_is_not_unwound_again():
    """A repeated bt (GDB unwinds again after its frame cache is flushed) gets the
    caller found before, without the strategies reading registers or the stack; a new
    stop unwinds again."""
    cache = StopCache(_zeroed_stack())
    code = cache.regions().code_at(JIT_PC)
    registers = {"rbp": STACK + 0x100, "rsp": STACK + 0xF0, "rip": JIT_PC}
    first = unwind_code(cache, code, JIT_PC, STACK + 0xF0, registers.__getitem__,
                        True, lambda: None)
    read = []

    def counted(name):
        read.append(name)
        return registers[name]

    again = unwind_code(cache, code, JIT_PC, STACK + 0xF0, counted, True, lambda: None)
    assert again is first and read == []
    cache.invalidate()  # the next stop
    code = cache.regions().code_at(JIT_PC)
    fresh = unwind_code(cache, code, JIT_PC, STACK + 0xF0, counted, True, lambda: None)
    assert fresh is not first and read
    assert (fresh.caller_pc, fresh.stop_reason) == (first.caller_pc, first.stop_reason)


class _Named:
    def __init__(self, registered, trace):
        self._registered, self._trace = registered, trace

    def is_registered(self, _address):
        return self._registered

    def is_trace(self, _address):
        return self._trace


class _Process:
    def __init__(self, names_code):
        self._names_code = names_code

    def names_code(self, _address):
        return self._names_code


class _Cache:
    def __init__(self, named, debugger_names_code=False):
        self._named = named
        self.process = _Process(debugger_names_code)

    def named_regions(self):
        return self._named


def test_registered_code_is_the_debuggers_unless_it_is_a_trace():
    jit = Region(JIT_START, JIT_START + 0x100, "perf-map", "f")
    assert leaves_to_debugger(_Cache(_Named(True, False)), jit, JIT_PC)
    assert not leaves_to_debugger(_Cache(_Named(True, True)), jit, JIT_PC)
    assert not leaves_to_debugger(_Cache(_Named(False, False)), jit, JIT_PC)


def test_code_the_debugger_names_itself_is_the_debuggers_unless_it_is_a_trace():
    """JIT code a runtime describes to GDB through its JIT reader API: GDB's names and
    GDB's (the reader's) unwinding."""
    jit = Region(JIT_START, JIT_START + 0x100, "maps", None)
    assert leaves_to_debugger(_Cache(_Named(False, False), True), jit, JIT_PC)
    assert not leaves_to_debugger(_Cache(_Named(False, True), True), jit, JIT_PC)
    nocfi = Region(LIB_START, LIB_START + 0x100, "no-cfi", "clone")
    assert not leaves_to_debugger(_Cache(None), nocfi, LIB_START)
