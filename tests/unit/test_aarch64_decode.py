"""The aarch64 prologue decoder on instructions as the GNU assembler encodes them (the
words below, with the assembly they came from)."""

import struct

import pytest

from jit_unwind.arch import AARCH64, by_debugger_name, by_elf_machine
from jit_unwind.arch import aarch64_decoder as aarch64
from jit_unwind.arch.x86_64_decoder import DecodeError

SHIM = [
    0xD503233F,  # paciasp
    0xA9BA7BFD,  # stp x29, x30, [sp, #-96]!
    0x910003FD,  # mov x29, sp
    0xA90153F3,  # stp x19, x20, [sp, #16]
    0xA9025BF5,  # stp x21, x22, [sp, #32]
    0x6D0327E8,  # stp d8, d9, [sp, #48]
    0xF90023F7,  # str x23, [sp, #64]
    0xAA0003F3,  # mov x19, x0
    0x90000001,  # adrp x1, .
    0xF9400422,  # ldr x2, [x1, #8]
    0xD63F0040,  # blr x2
    0xD65F03C0,  # ret
]
LEAF = [
    0xD503245F,  # bti c
    0xD10083FF,  # sub sp, sp, #0x20
    0xF90007E0,  # str x0, [sp, #8]
    0xD28000A0,  # mov x0, #5
    0xD4200000,  # brk #0
]
FRAMELESS = [
    0xD100C3FF,  # sub sp, sp, #0x30
    0xF90017FE,  # str x30, [sp, #40]
    0xA90153F3,  # stp x19, x20, [sp, #16]
    0xB4000040,  # cbz x0, +8
    0xAA0103F3,  # mov x19, x1
    0x97FFFFF6,  # bl leaf
    0xF94017FE,  # ldr x30, [sp, #40]
]


def code(words):
    return b"".join(struct.pack("<I", word) for word in words)


def test_shim_saves_pairs_relative_to_the_entry_sp():
    state = aarch64.decode_prologue(code(SHIM), 0x1000, 0x1000 + 11 * 4)  # after blr
    assert state.depth == 96
    assert state.saved == {"x29": -96, "x30": -88, "x19": -80, "x20": -72, "x21": -64,
                           "x22": -56, "x23": -32}
    assert state.frame_pointer_depth == 96 and state.calls == 1
    assert state.pushed_callee_saved() == ["x19", "x20", "x21", "x22", "x23", "x29"]
    assert "x19" not in state.clobbered  # written after it was saved


def test_leaf_keeps_the_return_address_in_x30():
    state = aarch64.decode_prologue(code(LEAF), 0, 16)
    assert state.depth == 32 and "x30" not in state.saved and not state.calls


def test_frameless_code_saves_x30_in_its_own_slot_and_follows_a_forward_branch():
    state = aarch64.decode_prologue(code(FRAMELESS), 0, 24)  # after bl
    assert state.depth == 48 and state.saved["x30"] == -8 and state.calls == 1


def test_pc_inside_an_instruction_or_an_unknown_one_fails():
    with pytest.raises(DecodeError):
        aarch64.decode_prologue(code(SHIM), 0, 6)
    with pytest.raises(DecodeError):
        aarch64.decode_prologue(code(SHIM), 0, 12 * 4)  # through the ret


def test_calls_before_return_addresses():
    assert aarch64.call_before(code([0xD63F0040]))  # blr x2
    assert aarch64.call_before(code([0x97FFFFF6]))  # bl
    assert aarch64.call_before(code([0xD63F087F]))  # blraaz x3
    assert not aarch64.call_before(code([0xD65F03C0]))  # ret
    assert not aarch64.call_before(code([0xAA0103F3]))  # mov


def test_frame_pointer_setup_and_pointer_authentication_bits():
    assert aarch64.frame_pointer_setup(code(SHIM)) == 12  # through mov x29, sp
    assert aarch64.frame_pointer_setup(code(LEAF)) is None
    assert aarch64.code_address(0x003C_0000_0040_1234) == 0x40_1234
    assert aarch64.code_address(0x0000_FFFF_8040_1234) == 0xFFFF_8040_1234


def test_the_architecture_is_found_by_its_names():
    assert by_debugger_name("aarch64") is AARCH64 and by_elf_machine(183) is AARCH64
    assert AARCH64.caller_sp_at_entry(0x1000) == 0x1000
    assert by_debugger_name("i386") is None
