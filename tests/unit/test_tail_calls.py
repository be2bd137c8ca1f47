"""stack/tail_calls.py on hand-made x86-64 code: caller -> wrapper (jmp) -> callee."""

from jit_unwind.debugger import Symbol
from jit_unwind.stack.tail_calls import TailCalls

CALLER, WRAPPER, CALLEE = 0x1000, 0x2000, 0x3000


def KNOWN(_address):  # a call site the wrapper's debug information describes
    return True


def INLINED(_address):  # inlined code's, or a function without DWARF: no call site
    return False


def rel32(after, target):
    return (target - after).to_bytes(4, "little", signed=True)


def memory(wrapper_code):
    code = {CALLER: b"\x90" * 11 + b"\xe8" + rel32(CALLER + 16, WRAPPER),
            WRAPPER: wrapper_code, CALLEE: b"\xc3"}

    def read(address, size):
        for start, data in code.items():
            if start <= address and address + size <= start + len(data):
                return data[address - start:address - start + size]
        return None

    def symbol_at(address):
        for start, data in code.items():
            if start <= address < start + len(data):
                return Symbol("f", start, start + len(data))
        return None
    return read, symbol_at


def test_a_wrapper_tail_calling_the_callee_is_a_frame():
    read, symbol_at = memory(b"\x5b" + b"\xe9" + rel32(WRAPPER + 6, CALLEE) + b"\x90")
    found = TailCalls(read, symbol_at, KNOWN).between(CALLER + 16, CALLEE)
    assert found == [WRAPPER + 6]


def test_no_frame_for_a_direct_call_no_call_site_or_two_paths():
    read, symbol_at = memory(b"\xc3")
    assert TailCalls(read, symbol_at, KNOWN).between(CALLER + 16, WRAPPER) == []
    jump = b"\xe9" + rel32(WRAPPER + 5, CALLEE)
    read, symbol_at = memory(jump + b"\x90")
    assert TailCalls(read, symbol_at, INLINED).between(CALLER + 16, CALLEE) == []
    read, symbol_at = memory(jump + b"\xe9" + rel32(WRAPPER + 10, CALLEE))
    assert TailCalls(read, symbol_at, KNOWN).between(CALLER + 16, CALLEE) == []
