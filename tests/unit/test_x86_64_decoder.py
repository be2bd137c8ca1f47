"""The prologue decoder on the byte sequences real JITs emit."""

import pytest

from jit_unwind.arch.x86_64_decoder import (DecodeError, call_length_before, decode_prologue,
                                      starts_frame_pointer)

BASE = 0x7F0000001000

TOY_TRAMPOLINE = bytes.fromhex(
    "f30f1efa" "55" "53" "4154" "4155" "4156" "4157" "4883ec08" "4889f8" "4889f7" "ffd0")
CPYTHON_312_TRAMPOLINE = bytes.fromhex("4883ec08" "ffd1")
CPYTHON_314_TRAMPOLINE = bytes.fromhex("f30f1efa" "55" "4889e5" "ffd1")
TOY_FP_FUNCTION = bytes.fromhex("55" "4889e5" "4883ec10" "48897df8" "48b8" + "11" * 8 + "ffd0")
TOY_FRAMELESS = bytes.fromhex("4883ec08" "48bd" + "ef" * 8 + "48bb" + "11" * 8 + "ffd0")


def decode(code: bytes):
    return decode_prologue(code, BASE, BASE + len(code))


def test_entry_trampoline_pushes_every_callee_saved_register():
    state = decode(TOY_TRAMPOLINE)
    assert state.depth == 6 * 8 + 8
    assert state.saved == {"rbp": -8, "rbx": -16, "r12": -24, "r13": -32, "r14": -40,
                           "r15": -48}
    assert state.calls == 1
    assert state.pushed_callee_saved() == ["rbx", "rbp", "r12", "r13", "r14", "r15"]


def test_cpython_312_perf_trampoline():
    state = decode(CPYTHON_312_TRAMPOLINE)
    assert (state.depth, state.saved, state.calls) == (8, {}, 1)


def test_cpython_314_perf_trampoline_keeps_a_frame_pointer():
    state = decode(CPYTHON_314_TRAMPOLINE)
    assert state.depth == 8 and state.saved == {"rbp": -8}
    assert state.frame_pointer_depth == 8


def test_frame_pointer_function_saves_rbp_and_writes_nothing_else_callee_saved():
    state = decode(TOY_FP_FUNCTION)
    assert state.depth == 8 + 16
    assert state.saved == {"rbp": -8}
    assert "rbx" not in state.clobbered


def test_frameless_code_clobbers_callee_saved_registers():
    state = decode(TOY_FRAMELESS)
    assert state.depth == 8
    assert {"rbp", "rbx"} <= state.clobbered
    assert state.saved == {}


def test_save_by_store_relative_to_rsp():
    code = bytes.fromhex("4883ec18" "48895c2408")  # sub rsp,0x18; mov [rsp+8], rbx
    assert decode(code).saved == {"rbx": -0x18 + 8}


def test_a_stop_inside_an_instruction_is_refused():
    with pytest.raises(DecodeError):
        decode_prologue(TOY_TRAMPOLINE, BASE, BASE + 7)  # middle of push r12


@pytest.mark.parametrize("code", [
    bytes.fromhex("c3"),              # ret
    bytes.fromhex("4883e4f0"),        # and rsp, -16: depth unknown
    bytes.fromhex("eb00"),            # jmp
    bytes.fromhex("0000"),            # add [rax], al (zero padding)
])
def test_what_is_not_a_prologue_is_refused(code):
    with pytest.raises(DecodeError):
        decode(code)


@pytest.mark.parametrize("tail, length", [
    ("e8" + "00" * 4, 5),          # call rel32
    ("ffd0", 2),                   # call rax
    ("41ffd3", 2),                 # call r11; its last two bytes are call rbx too
    ("ff1500000000", 6),           # call [rip+0]
    ("ff5008", 3),                 # call [rax+8]
])
def test_call_instructions_before_a_return_address(tail, length):
    assert call_length_before(bytes.fromhex("90" * 8 + tail)[-8:]) == length


def test_no_call_before_an_arbitrary_address():
    assert call_length_before(bytes.fromhex("4889e54883ec1090")) is None


def test_frame_pointer_prologue_detection():
    assert starts_frame_pointer(bytes.fromhex("554889e5"))
    assert starts_frame_pointer(bytes.fromhex("f30f1efa554889e5"))
    assert not starts_frame_pointer(bytes.fromhex("4883ec08ffd0"))


# The entry trampoline of CPython 3.13.5's JIT (every executor starts with it), as a
# gcc-built interpreter with clang-19 stencils emits it.
CPYTHON_313_JIT_SHIM = bytes.fromhex(
    "55" "4157" "4156" "4155" "4154" "53" "50"   # push rbp, r15..r12, rbx, rax
    "4889f5"                                     # mov rbp, rsi
    "488b0d0c0a0000"                             # mov rcx, [rip+0xa0c]
    "8b01"                                       # mov eax, [rcx]
    "ffc0"                                       # inc eax
    "7402"                                       # je +2
    "8901"                                       # mov [rcx], eax
    "4989fd"                                     # mov r13, rdi
    "4989d4"                                     # mov r12, rdx
    "48891424"                                   # mov [rsp], rdx
    "90"                                         # nop
    "e843000000")                                # call trace


def test_cpython_313_jit_shim_pushes_every_callee_saved_register():
    state = decode(CPYTHON_313_JIT_SHIM)
    assert state.depth == 7 * 8
    assert state.saved == {"rbp": -8, "r15": -16, "r14": -24, "r13": -32, "r12": -40,
                           "rbx": -48}   # the pushed rax is scratch, not a save
    assert "rcx" in state.clobbered   # rbp, r12, r13 are written only after their push
    assert state.calls == 1


def test_forward_jump_over_stack_changes_is_refused():
    code = bytes.fromhex("7404" "4883ec08" "ffd0")  # je over sub rsp, 8
    with pytest.raises(DecodeError):
        decode(code)


def test_backward_jump_is_refused():
    with pytest.raises(DecodeError):
        decode(bytes.fromhex("90" "74fd" "ffd0"))
