"""aarch64 (AAPCS64): a call leaves the return address in x30; x29 is the frame
pointer, pointing at the frame record {caller's x29, x30}; saved return addresses may
carry pointer-authentication bits."""

from . import aarch64_decoder as decoder
from .x86_64_decoder import DecodeError
from .base import Architecture

AARCH64 = Architecture(
    name="aarch64",
    pc="pc", sp="sp", fp="x29", link_register="x30",
    callee_saved=decoder.CALLEE_SAVED,
    dwarf_registers={**{number: f"x{number}" for number in range(31)}, 31: "sp"},
    return_address_column=30,
    call_window=4,
    call_before=decoder.call_before,
    code_address=decoder.code_address,
    frame_pointer_setup=decoder.frame_pointer_setup,
    decode_prologue=decoder.decode_prologue,
    decode_frame_setup=decoder.decode_frame_setup,
    decode_error=DecodeError,
    instruction_alignment=4,
    anchored_starts=decoder.anchored_starts,
    debugger_names=("aarch64", "arm64", "aarch64-linux-gnu"),
    elf_machine=183,
)
