"""Decode the straight-line start of aarch64 functions: prologues, shims, trampolines.

The aarch64 twin of ``x86_64.py``, with the same contract: simulate, from a function's
first instruction up to a pc inside it, what each instruction does to sp and to the
callee-saved registers (x19-x29) and the link register (x30, where a call leaves the
return address).  Only what prologues, JIT shims and trampolines use is understood
(``stp``/``str`` of registers to the stack, ``sub``/``add sp``, ``mov x29, sp``, moves,
loads, ``bl``/``blr``, hints such as ``bti`` and ``paciasp``); anything else makes the
decode fail and the caller moves on to another strategy.
"""

from typing import List, Optional, Set

from .x86_64_decoder import DecodeError, PrologueState

REGISTERS = tuple(f"x{number}" for number in range(31))
SP = 31  # register number 31 is sp in address and add/sub-immediate operands
FP, LR = 29, 30
CALLEE_SAVED = tuple(f"x{number}" for number in range(19, 30))  # x29 is the frame pointer
MAX_INSTRUCTIONS = 256
MAX_STACK_EFFECT = 1 << 20

HINTS = {0xD503201F: "nop", 0xD503233F: "paciasp", 0xD503237F: "pacibsp",
         0xD503245F: "bti c", 0xD503241F: "bti", 0xD503249F: "bti j", 0xD50324DF: "bti jc"}
BTI_C, PACIASP, PACIBSP = 0xD503245F, 0xD503233F, 0xD503237F
RET = 0xD65F03C0
# Bits of a saved return address above the 48-bit user address space: pointer
# authentication codes (and top-byte tags) that must go before the address is used.
ADDRESS_BITS = 48


class Aarch64PrologueState(PrologueState):
    def pushed_callee_saved(self) -> List[str]:
        return [reg for reg in CALLEE_SAVED if reg in self.saved]


def code_address(address: int) -> int:
    """A saved return address without its pointer-authentication bits (user space)."""
    if address >> ADDRESS_BITS and not (address >> 55) & 1:
        return address & ((1 << ADDRESS_BITS) - 1)
    return address


def is_call(word: int) -> bool:
    """``bl``, ``blr`` and the pointer-authenticating ``blraa``/``blrab`` forms."""
    return ((word & 0xFC000000) == 0x94000000 or (word & 0xFFFFFC1F) == 0xD63F0000
            or (word & 0xFFFFF81F) == 0xD63F081F or (word & 0xFFFFF800) == 0xD73F0800)


def call_before(code: bytes) -> bool:
    """True if the last instruction of ``code`` (bytes ending at a return address) is
    a call."""
    return len(code) >= 4 and is_call(int.from_bytes(code[-4:], "little"))


# Instructions a function may start with: bti c, paciasp, pacibsp.
LANDING_PADS = (BTI_C, PACIASP, PACIBSP)


def anchored_starts(window: bytes, address: int) -> Set[int]:
    """Offsets in ``window`` (bytes from ``address``) of the instructions a function
    may start at: a landing pad (``bti c``, ``paciasp``), or the one after a ``ret`` or
    after ``udf #0`` padding (zeros) that is not padding itself."""
    found = set()
    first = -address % 4
    words = [int.from_bytes(window[at:at + 4], "little")
             for at in range(first, len(window) - 3, 4)]
    for index, word in enumerate(words):
        offset = first + index * 4
        if word in LANDING_PADS:
            found.add(offset)
        elif index and word and words[index - 1] in (RET, 0):
            found.add(offset)
    return found


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


class _Simulator:
    def __init__(self) -> None:
        self.state = Aarch64PrologueState()
        self.jump_target: Optional[int] = None

    def write(self, reg: int) -> None:
        if reg >= len(REGISTERS):
            return  # xzr
        name = REGISTERS[reg]
        if name not in self.state.saved:
            self.state.clobbered.add(name)

    def save(self, reg: int, offset: int) -> None:
        """``reg`` stored at ``offset`` from the entry sp (only callee-saved ones and the
        link register are worth restoring)."""
        if reg >= len(REGISTERS):
            return
        name = REGISTERS[reg]
        if ((name in CALLEE_SAVED or reg == LR) and name not in self.state.saved
                and name not in self.state.clobbered):
            self.state.saved[name] = offset

    def base_offset(self, base: int, imm: int) -> Optional[int]:
        """Entry-sp offset of ``[base, #imm]`` when base is sp or the frame pointer."""
        if base == SP:
            return -self.state.depth + imm
        if base == FP and self.state.frame_pointer_depth is not None \
                and "x29" not in self.state.clobbered:
            return -self.state.frame_pointer_depth + imm
        return None


# stp/ldp of 64-bit general registers and of d registers: post-index, offset, pre-index.
_STORE_PAIRS = (0xA8800000, 0xA9000000, 0xA9800000, 0x6C800000, 0x6D000000, 0x6D800000)
_LOAD_PAIRS = (0xA8C00000, 0xA9400000, 0xA9C00000, 0x6CC00000, 0x6D400000, 0x6DC00000)


def _store_pair(sim: _Simulator, word: int, note) -> None:
    """``stp`` of two registers (64-bit general or SIMD): pre-index, offset or post."""
    vector = bool(word & (1 << 26))
    mode = (word >> 23) & 3  # 1 post-index, 2 signed offset, 3 pre-index
    imm = _signed((word >> 15) & 0x7F, 7) * 8
    rt2, base, rt = (word >> 10) & 31, (word >> 5) & 31, word & 31
    state = sim.state
    offset: Optional[int]
    if base == SP and mode in (1, 3):
        if mode == 3:
            state.depth -= imm
            offset = -state.depth
        else:
            offset = -state.depth
            state.depth -= imm
    else:
        if mode != 2:
            sim.write(base)
        offset = sim.base_offset(base, imm)
    if not vector and offset is not None:
        sim.save(rt, offset)
        sim.save(rt2, offset + 8)
    note(f"stp {'d' if vector else 'x'}{rt}, {'d' if vector else 'x'}{rt2}")


def _store_single(sim: _Simulator, word: int, note) -> bool:
    """``str xN`` (unsigned offset, pre- or post-index) or ``str dN``: True if it was."""
    state = sim.state
    rt, base = word & 31, (word >> 5) & 31
    if (word & 0xFFC00000) in (0xF9000000, 0xFD000000):  # str x/d, [base, #imm12*8]
        offset = sim.base_offset(base, ((word >> 10) & 0xFFF) * 8)
        if offset is not None and word & 0xFFC00000 == 0xF9000000:
            sim.save(rt, offset)
        note("str [base, #imm]")
        return True
    if (word & 0xFFE00400) in (0xF8000400, 0xFC000400):  # str x/d with writeback
        imm = _signed((word >> 12) & 0x1FF, 9)
        pre = bool(word & (1 << 11))
        if base != SP:
            sim.write(base)
            note("str with writeback")
            return True
        if pre:
            state.depth -= imm
        offset = -state.depth
        if not pre:
            state.depth -= imm
        if word & 0xFFE00400 == 0xF8000400:
            sim.save(rt, offset)
        note("str [sp, #imm]!" if pre else "str [sp], #imm")
        return True
    return False


def _add_sub_immediate(sim: _Simulator, word: int, note) -> bool:
    """``add``/``sub`` (immediate, 64-bit), on sp or setting the frame pointer."""
    if (word & 0x1F800000) != 0x11000000 or not word >> 31:
        return False
    subtract = bool(word & (1 << 30))
    sets_flags = bool(word & (1 << 29))
    imm = ((word >> 10) & 0xFFF) << (12 if word & (1 << 22) else 0)
    rn, rd = (word >> 5) & 31, word & 31
    state = sim.state
    if rd == SP and not sets_flags:
        if rn != SP:
            raise DecodeError("sp set from another register")
        state.depth += imm if subtract else -imm
        note(f"{'sub' if subtract else 'add'} sp, sp, #{imm:#x}")
        return True
    if rd == FP and rn == SP and not subtract and not sets_flags:
        state.frame_pointer_depth = state.depth - imm
        sim.write(FP)
        note(f"add x29, sp, #{imm:#x}")
        return True
    if not (sets_flags and rd == 31):  # cmp/cmn write nothing
        sim.write(rd)
    note("add/sub immediate")
    return True


# Instructions that only write their destination register Rd (bits 0-4): (mask, value).
_WRITES_RD = (
    (0x1F000000, 0x10000000),  # adr, adrp
    (0x7F800000, 0x52800000),  # movz
    (0x7F800000, 0x12800000),  # movn
    (0x7F800000, 0x72800000),  # movk
    (0x1F000000, 0x0A000000),  # and/orr/eor/ands (shifted register), mov xD, xM
    (0x1F200000, 0x0B000000),  # add/sub (shifted register)
    (0x1F800000, 0x12000000),  # and/orr/eor (immediate)
    (0x3B000000, 0x39000000),  # ldr/ldrb/ldrh/str... (unsigned offset): loads only, below
    (0x3B000000, 0x18000000),  # ldr (literal)
    (0x1FE00000, 0x1AC00000),  # udiv/sdiv/lslv/...
    (0x1F000000, 0x1B000000),  # madd/msub/mul
    (0x1F800000, 0x13000000),  # sbfm/ubfm/bfm (lsl/lsr/asr/sxtw ...)
    (0x1FE00000, 0x1A800000),  # csel/csinc
)


def _writes_rd(sim: _Simulator, word: int, note) -> bool:
    for mask, value in _WRITES_RD:
        if word & mask == value:
            if value == 0x39000000:
                if not (word >> 22) & 3:  # a store: memory only (not to our slots)
                    note("store")
                    return True
                if word & (1 << 26):  # a SIMD load
                    note("load simd")
                    return True
            if value == 0x0A000000 and word & 31 == 31 and word & (1 << 29):
                note("tst")  # ands into xzr
                return True
            sim.write(word & 31)
            note("write register")
            return True
    return False


def _step(code: bytes, pos: int, sim: _Simulator) -> int:
    """Decode the instruction at ``pos``, apply it, return the next position."""
    if pos + 4 > len(code):
        raise DecodeError("truncated instruction")
    word = int.from_bytes(code[pos:pos + 4], "little")
    state = sim.state
    begin = pos

    def note(text: str) -> None:
        state.instructions.append(f"{begin:#x}: {text}")

    if word in HINTS:
        note(HINTS[word])
        return pos + 4
    top = word & 0xFFC00000
    if top in _STORE_PAIRS:
        _store_pair(sim, word, note)
        return pos + 4
    if top in _LOAD_PAIRS:
        mode = (word >> 23) & 3
        if (word >> 5) & 31 == SP and mode in (1, 3):
            raise DecodeError("ldp moving sp")
        if not word & (1 << 26):
            sim.write(word & 31)
            sim.write((word >> 10) & 31)
        note("ldp")
        return pos + 4
    if _store_single(sim, word, note):
        return pos + 4
    if _add_sub_immediate(sim, word, note):
        return pos + 4
    if is_call(word):
        state.calls += 1
        for reg in range(19):  # a call may change every register the callee need not keep
            name = REGISTERS[reg]
            if name not in state.saved:
                state.clobbered.add(name)
        sim.write(LR)
        note("call")
        return pos + 4
    if (word & 0x7E000000) == 0x34000000 or (word & 0xFF000010) == 0x54000000 \
            or (word & 0x7E000000) == 0x36000000:  # cbz/cbnz, b.cond, tbz/tbnz
        if (word & 0xFF000010) == 0x54000000 or (word & 0x7E000000) == 0x34000000:
            offset = _signed((word >> 5) & 0x7FFFF, 19) * 4
        else:
            offset = _signed((word >> 5) & 0x3FFF, 14) * 4
        sim.jump_target = pos + offset
        note("conditional branch")
        return pos + 4
    if (word & 0xFFC00000) in (0xF9400000, 0xB9400000):  # ldr x/w, [base, #imm]
        sim.write(word & 31)
        note("ldr")
        return pos + 4
    if _writes_rd(sim, word, note):
        return pos + 4
    raise DecodeError(f"unsupported instruction {word:08x}")


def decode_prologue(code: bytes, start: int, stop: int) -> PrologueState:
    """Simulate ``code`` (which begins at address ``start``) up to address ``stop``,
    an instruction boundary; DecodeError when it cannot be followed."""
    sim = _Simulator()
    state = sim.state
    limit = stop - start
    if limit < 0 or limit > len(code) or limit % 4 or start % 4:
        raise DecodeError("pc outside the decoded bytes")
    pos = 0
    landings: dict[int, int] = {}
    while pos < limit:
        if len(state.instructions) >= MAX_INSTRUCTIONS:
            raise DecodeError("too many instructions")
        if pos in landings and landings.pop(pos) != state.depth:
            raise DecodeError("paths meet with different stack depths")
        pos = _step(code, pos, sim)
        if not 0 <= state.depth <= MAX_STACK_EFFECT:
            raise DecodeError("sp moved where no prologue moves it")
        target = sim.jump_target
        if target is not None:
            sim.jump_target = None
            if target < pos:
                raise DecodeError("backward branch")
            if target <= limit:
                landings[target] = state.depth
    if any(target < limit for target in landings):
        raise DecodeError("a branch lands before the pc on another path")
    if pos in landings and landings[pos] != state.depth:
        raise DecodeError("paths meet with different stack depths")
    return state


_SETUP_PREFIXES = ("nop", "paciasp", "pacibsp", "bti", "stp ", "str [sp", "sub sp",
                   "add x29, sp")


def decode_frame_setup(code: bytes) -> Optional[PrologueState]:
    """The frame set-up a function starts with (hints, stores of registers to the
    stack, ``sub sp``, ``mov x29, sp``) up to the first other instruction; None when
    nothing was set up or the bytes do not decode."""
    sim = _Simulator()
    pos = 0
    while pos + 4 <= len(code) and len(sim.state.instructions) < 32:
        scratch = _Simulator()
        try:
            _step(code, pos, scratch)
        except DecodeError:
            break
        step = scratch.state.instructions[-1].split(": ", 1)[1]
        if not step.startswith(_SETUP_PREFIXES):
            break
        pos = _step(code, pos, sim)
    return sim.state if sim.state.depth else None


def frame_pointer_setup(code: bytes) -> Optional[int]:
    """Length of the set-up ending in ``mov x29, sp`` (or ``add x29, sp, #n``) that
    saves x29 and x30 first, when ``code`` starts with one, else None."""
    sim = _Simulator()
    pos = 0
    while pos + 4 <= len(code) and pos < 32:
        try:
            pos = _step(code, pos, sim)
        except DecodeError:
            return None
        state = sim.state
        last = state.instructions[-1].split(": ", 1)[1]
        if state.frame_pointer_depth is not None:
            saved = state.saved
            return pos if "x29" in saved and "x30" in saved else None
        if not last.startswith(_SETUP_PREFIXES):
            return None
    return None
