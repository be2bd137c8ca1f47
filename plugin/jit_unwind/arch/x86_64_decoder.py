"""Decode the straight-line start of x86-64 functions: prologues, shims, trampolines.

We simulate, from a function's first byte up to a pc inside it, what each instruction
does to the stack pointer and to the callee-saved registers.  Only instructions that
prologues, JIT shims and trampolines use are understood; anything else (a branch, a
``ret``, an unknown opcode, ``and rsp, -16``) makes the decode fail, and the caller
moves on to another strategy.  That is the safe answer: a wrong decode would invent
frames.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

from ..records import field, record
from typing import Dict, List, Optional, Set, Tuple

REGISTERS = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15")
RSP, RBP = 4, 5
CALLEE_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")
MAX_INSTRUCTIONS = 256
MAX_STACK_EFFECT = 1 << 20  # bytes a decoded prologue may move rsp down


class DecodeError(Exception):
    """The bytes are not a prologue we understand."""


@record
class PrologueState:
    """What the code from the function's entry to ``pc`` did.

    ``depth``: bytes the stack grew since entry (entry sp = sp + depth).
    ``saved``: register name -> offset from the entry sp where its entry value was
    stored (negative).  ``clobbered``: registers written without being saved first.
    ``frame_pointer_depth``: depth at which ``mov rbp, rsp`` ran, if it did.
    ``calls``: how many calls the decoded code makes (a shim calls its body).
    """

    depth: int = 0
    saved: Dict[str, int] = field(default_factory=dict)
    clobbered: Set[str] = field(default_factory=set)
    frame_pointer_depth: Optional[int] = None
    calls: int = 0
    instructions: List[str] = field(default_factory=list)

    def __init__(self, depth: int = 0, saved: Optional[Dict[str, int]] = None,
                 clobbered: Optional[Set[str]] = None,
                 frame_pointer_depth: Optional[int] = None, calls: int = 0,
                 instructions: Optional[List[str]] = None):
        # Written out (records.py): compiled, it was ~0.2 ms of the first bt through JIT
        # code.
        self.depth = depth
        self.saved = {} if saved is None else saved
        self.clobbered = set() if clobbered is None else clobbered
        self.frame_pointer_depth = frame_pointer_depth
        self.calls = calls
        self.instructions = [] if instructions is None else instructions

    def pushed_callee_saved(self) -> List[str]:
        return [reg for reg in CALLEE_SAVED if reg in self.saved]


@record
class _Operand:
    mod: int
    reg: int
    rm: int
    base: Optional[int]  # memory operand base register, None for rip-relative/absolute
    index: Optional[int]
    disp: int
    length: int  # bytes of ModRM + SIB + displacement

    def __init__(self, mod: int, reg: int, rm: int, base: Optional[int],
                 index: Optional[int], disp: int, length: int):
        # Written out, as PrologueState's.
        self.mod = mod
        self.reg = reg
        self.rm = rm
        self.base = base
        self.index = index
        self.disp = disp
        self.length = length


def _modrm(code: bytes, pos: int, rex: int) -> _Operand:
    if pos >= len(code):
        raise DecodeError("truncated ModRM")
    byte = code[pos]
    mod, reg, rm = byte >> 6, (byte >> 3) & 7, byte & 7
    reg |= (rex & 4) << 1
    length = 1
    base: Optional[int] = None
    index: Optional[int] = None
    disp = 0
    if mod == 3:
        return _Operand(mod, reg, rm | ((rex & 1) << 3), None, None, 0, length)
    if rm == 4:
        if pos + 1 >= len(code):
            raise DecodeError("truncated SIB")
        sib = code[pos + 1]
        length += 1
        base = (sib & 7) | ((rex & 1) << 3)
        index_reg = ((sib >> 3) & 7) | ((rex & 2) << 2)
        index = None if index_reg == RSP else index_reg
        if (sib & 7) == 5 and mod == 0:
            base = None
            disp_size = 4
        else:
            disp_size = {0: 0, 1: 1, 2: 4}[mod]
    elif rm == 5 and mod == 0:
        base = None  # rip-relative
        disp_size = 4
    else:
        base = rm | ((rex & 1) << 3)
        disp_size = {0: 0, 1: 1, 2: 4}[mod]
    start = pos + length
    if start + disp_size > len(code):
        raise DecodeError("truncated displacement")
    if disp_size:
        disp = int.from_bytes(code[start:start + disp_size], "little", signed=True)
    return _Operand(mod, reg, rm, base, index, disp, length + disp_size)


def _imm(code: bytes, pos: int, size: int) -> int:
    if pos + size > len(code):
        raise DecodeError("truncated immediate")
    return int.from_bytes(code[pos:pos + size], "little", signed=True)


class _Simulator:
    def __init__(self) -> None:
        self.state = PrologueState()
        self.jump_target: Optional[int] = None  # position a conditional jump may go to

    def write(self, reg: int) -> None:
        if reg == RSP:
            raise DecodeError("rsp changed in a way we cannot follow")
        name = REGISTERS[reg]
        if name not in self.state.saved:
            self.state.clobbered.add(name)

    def push(self, reg: Optional[int]) -> None:
        self.state.depth += 8
        if reg is not None:
            name = REGISTERS[reg]
            # Only callee-saved registers are worth restoring: the others hold nothing
            # the caller can rely on after a call.
            if (name in CALLEE_SAVED and name not in self.state.saved
                    and name not in self.state.clobbered):
                self.state.saved[name] = -self.state.depth

    def store(self, operand: _Operand, reg: int) -> None:
        """``mov [base+disp], reg``: a save when base is rsp (or the frame pointer)."""
        name = REGISTERS[reg]
        if (name not in CALLEE_SAVED or operand.index is not None
                or name in self.state.saved or name in self.state.clobbered):
            return
        if operand.base == RSP:
            self.state.saved[name] = -self.state.depth + operand.disp
        elif operand.base == RBP and self.state.frame_pointer_depth is not None:
            self.state.saved[name] = -self.state.frame_pointer_depth + operand.disp


def decode_prologue(code: bytes, start: int, stop: int) -> PrologueState:
    """Simulate ``code`` (which begins at address ``start``) up to address ``stop``.

    ``stop`` must fall exactly on an instruction boundary, else DecodeError.
    """
    sim = _Simulator()
    state = sim.state
    pos = 0
    limit = stop - start
    if limit < 0 or limit > len(code):
        raise DecodeError("pc outside the decoded bytes")
    count = 0
    # Forward conditional jumps (a counter's overflow check, say) are followed by
    # falling through; where they land the stack must be as it was when they jumped.
    landings: Dict[int, int] = {}
    while pos < limit:
        count += 1
        if count > MAX_INSTRUCTIONS:
            raise DecodeError("too many instructions")
        if pos in landings and landings.pop(pos) != state.depth:
            raise DecodeError("paths meet with different stack depths")
        pos = _step(code, pos, sim)
        target = sim.jump_target
        if target is not None:
            sim.jump_target = None
            if target <= pos - 1:
                raise DecodeError("backward jump")
            if target <= limit:
                landings[target] = state.depth
    if pos != limit:
        raise DecodeError("pc is not on an instruction boundary")
    if any(target < limit for target in landings):
        raise DecodeError("a jump lands inside an instruction")
    if pos in landings and landings[pos] != state.depth:
        raise DecodeError("paths meet with different stack depths")
    return state


def _step(code: bytes, pos: int, sim: _Simulator) -> int:
    """Decode one instruction at ``pos``, apply it, return the next position."""
    state = sim.state
    begin = pos
    opsize16 = False
    rep = False
    while pos < len(code) and code[pos] in (0x66, 0xF2, 0xF3, 0x2E, 0x3E):
        opsize16 |= code[pos] == 0x66
        rep |= code[pos] in (0xF2, 0xF3)
        pos += 1
    rex = 0
    if pos < len(code) and 0x40 <= code[pos] <= 0x4F:
        rex = code[pos]
        pos += 1
    if pos >= len(code):
        raise DecodeError("truncated instruction")
    op = code[pos]
    pos += 1
    wide = bool(rex & 8)
    ext_b = (rex & 1) << 3

    def note(text: str) -> None:
        state.instructions.append(f"{begin:#x}: {text}")

    if op == 0x0F:
        if pos >= len(code):
            raise DecodeError("truncated 0f opcode")
        op2 = code[pos]
        pos += 1
        if op2 == 0x1E and rep and pos < len(code) and code[pos] in (0xFA, 0xFB):
            note("endbr")
            return pos + 1
        if op2 == 0x1F:  # multi-byte nop
            operand = _modrm(code, pos, rex)
            note("nop")
            return pos + operand.length
        if 0x80 <= op2 <= 0x8F:  # jcc rel32
            sim.jump_target = pos + 4 + _imm(code, pos, 4)
            note("jcc rel32")
            return pos + 4
        if op2 in (0xB6, 0xB7, 0xBE, 0xBF, 0xAF) or 0x40 <= op2 <= 0x4F:
            operand = _modrm(code, pos, rex)  # movzx, movsx, imul, cmovcc: reg <- r/m
            sim.write(operand.reg)
            note("load reg")
            return pos + operand.length
        raise DecodeError(f"unsupported opcode 0f {op2:02x}")
    if 0x50 <= op <= 0x57:
        sim.push((op - 0x50) | ext_b)
        note(f"push {REGISTERS[(op - 0x50) | ext_b]}")
        return pos
    if 0x58 <= op <= 0x5F:
        reg = (op - 0x58) | ext_b
        if reg == RSP:
            raise DecodeError("pop rsp")
        state.depth -= 8
        sim.write(reg)
        note(f"pop {REGISTERS[reg]}")
        return pos
    if op == 0x90:
        note("nop")
        return pos
    if 0x70 <= op <= 0x7F:  # jcc rel8
        sim.jump_target = pos + 1 + _imm(code, pos, 1)
        note("jcc rel8")
        return pos + 1
    if op == 0x63:  # movsxd reg, r/m32
        operand = _modrm(code, pos, rex)
        sim.write(operand.reg)
        note("movsxd")
        return pos + operand.length
    if op == 0xFE:  # inc/dec r/m8
        operand = _modrm(code, pos, rex)
        if operand.reg & 7 > 1:
            raise DecodeError("unsupported fe form")
        if operand.mod == 3:
            sim.write(operand.rm)
        note("inc/dec byte")
        return pos + operand.length
    if op in (0x68, 0x6A):
        sim.push(None)
        note("push imm")
        return pos + (4 if op == 0x68 else 1)
    if op in (0x81, 0x83):
        operand = _modrm(code, pos, rex)
        imm_size = 4 if op == 0x81 else 1
        imm = _imm(code, pos + operand.length, 2 if (op == 0x81 and opsize16) else imm_size)
        size = operand.length + (2 if (op == 0x81 and opsize16) else imm_size)
        kind = operand.reg & 7  # /0 add, /5 sub, /7 cmp, ...
        if operand.mod == 3:
            if operand.rm == RSP and wide:
                if kind == 5:
                    state.depth += imm
                elif kind == 0:
                    state.depth -= imm
                elif kind != 7:
                    raise DecodeError("rsp arithmetic we cannot follow")
                note(f"{'sub' if kind == 5 else 'add'} rsp, {imm:#x}")
            elif kind != 7:
                sim.write(operand.rm)
                note("arith reg, imm")
        else:
            note("arith mem, imm")
        return pos + size
    if op in (0x89, 0x8B, 0x8D, 0x01, 0x03, 0x09, 0x0B, 0x21, 0x23, 0x29, 0x2B,
              0x31, 0x33, 0x85, 0x39, 0x3B, 0x88, 0x8A):
        operand = _modrm(code, pos, rex)
        if op == 0x89 and operand.mod == 3:
            if operand.rm == RBP and operand.reg == RSP and wide:
                state.frame_pointer_depth = state.depth
                sim.write(RBP)
                note("mov rbp, rsp")
            else:
                sim.write(operand.rm)
                note("mov reg, reg")
        elif op == 0x8B and operand.mod == 3:
            if operand.reg == RBP and operand.rm == RSP and wide:
                state.frame_pointer_depth = state.depth
                sim.write(RBP)
                note("mov rbp, rsp")
            else:
                sim.write(operand.reg)
                note("mov reg, reg")
        elif op == 0x89:
            if wide:
                sim.store(operand, operand.reg)
            note("mov mem, reg")
        elif op == 0x8D:
            if operand.reg == RSP and operand.base == RSP and operand.index is None:
                state.depth -= operand.disp
                note("lea rsp, [rsp+disp]")
            elif operand.reg == RBP and operand.base == RSP and operand.index is None:
                state.frame_pointer_depth = state.depth - operand.disp
                sim.write(RBP)
                note("lea rbp, [rsp+disp]")
            else:
                sim.write(operand.reg)
                note("lea")
        elif op in (0x85, 0x39, 0x3B):
            note("test/cmp")
        elif op == 0x88:
            if operand.mod == 3:
                sim.write(operand.rm)
            note("mov byte")
        elif operand.mod == 3 and op in (0x01, 0x09, 0x21, 0x29, 0x31):
            sim.write(operand.rm)
            note("arith reg, reg")
        elif op in (0x03, 0x0B, 0x23, 0x2B, 0x33, 0x8B, 0x8A):
            sim.write(operand.reg)
            note("load/arith reg, mem")
        else:
            note("arith mem, reg")
        return pos + operand.length
    if 0xB8 <= op <= 0xBF:
        reg = (op - 0xB8) | ext_b
        sim.write(reg)
        note(f"mov {REGISTERS[reg]}, imm")
        return pos + (8 if wide else (2 if opsize16 else 4))
    if op == 0xC7:
        operand = _modrm(code, pos, rex)
        if operand.reg & 7:
            raise DecodeError("unsupported c7 form")
        if operand.mod == 3:
            sim.write(operand.rm)
        note("mov r/m, imm32")
        return pos + operand.length + (2 if opsize16 else 4)
    if op == 0xE8:
        state.calls += 1
        note("call rel32")
        return pos + 4
    if op == 0xFF:
        operand = _modrm(code, pos, rex)
        kind = operand.reg & 7
        if kind == 2:
            state.calls += 1
            note("call indirect")
            return pos + operand.length
        if kind == 6:
            sim.push(None)
            note("push r/m")
            return pos + operand.length
        if kind in (0, 1):  # inc/dec r/m
            if operand.mod == 3:
                sim.write(operand.rm)
            note("inc/dec")
            return pos + operand.length
        raise DecodeError(f"unsupported ff /{kind}")
    raise DecodeError(f"unsupported opcode {op:02x}")


# Encodings of the calls a return address may follow: (length, predicate on the bytes).
def call_length_before(code: bytes) -> Optional[int]:
    """If ``code`` (bytes ending right at a return address) ends with a call
    instruction, return its length, else None."""
    n = len(code)
    if n >= 5 and code[n - 5] == 0xE8:
        return 5
    # ff /2 with the various ModRM forms; REX prefixes are optional.
    for length in (2, 3, 4, 6, 7, 8):
        if n < length:
            continue
        candidate = code[n - length:]
        pos = 0
        if 0x40 <= candidate[pos] <= 0x4F:
            pos += 1
        if pos >= len(candidate) or candidate[pos] != 0xFF:
            continue
        try:
            operand = _modrm(candidate, pos + 1, candidate[0] if pos else 0)
        except DecodeError:
            continue
        if (operand.reg & 7) == 2 and pos + 1 + operand.length == length:
            return length
    return None


def starts_frame_pointer(code: bytes) -> bool:
    """True if ``code`` begins with ``[endbr64;] push rbp; mov rbp, rsp``."""
    if code.startswith(b"\xf3\x0f\x1e\xfa"):
        code = code[4:]
    return code[:4] in (b"\x55\x48\x89\xe5", b"\x55\x48\x8b\xec")


# What a prologue does before the body starts: save registers, set up rbp, make room.
_SETUP_STEPS = ("endbr", "push ", "mov rbp, rsp", "sub rsp, ")


def decode_frame_setup(code: bytes) -> Optional[PrologueState]:
    """Decode the frame set-up at the start of ``code`` (a function's first bytes):
    pushes, ``mov rbp, rsp`` and ``sub rsp, N``, up to the first
    instruction that is none of these.  None when nothing was set up or the bytes do
    not decode."""
    sim = _Simulator()
    pos = 0
    while pos < len(code) and len(sim.state.instructions) < 32:
        scratch = _Simulator()
        try:
            _step(code, pos, scratch)
        except DecodeError:  # the body starts with something we need not understand
            break
        step = scratch.state.instructions[-1].split(": ", 1)[1]
        if not step.startswith(_SETUP_STEPS):
            break
        pos = _step(code, pos, sim)
    return sim.state if sim.state.depth else None


@record(frozen=True)
class StackEffect:
    """The stack effect in force at ``offset`` (before that instruction runs): ``depth``
    bytes below the entry sp, callee-saved registers stored at entry-sp offsets
    (``saved``), callee-saved registers written without being saved (``lost``)."""

    offset: int
    depth: int
    saved: Tuple[Tuple[str, int], ...]
    lost: Tuple[str, ...]


def decode_steps(code: bytes, limit: int = MAX_INSTRUCTIONS) -> Tuple[List[StackEffect], int]:
    """The stack effect before every instruction of the straight-line start of ``code``
    (a function's bytes from its first one), and how many bytes are covered exactly.

    Decoding stops after a ``ret`` (the function's end), before the first instruction
    it does not understand, and after a branch (what follows may be reached with another
    stack effect).  ``pop`` of a saved register and ``leave`` restore what they pop."""
    sim = _Simulator()
    state = sim.state
    steps: List[StackEffect] = []
    pos = 0
    while pos < len(code) and len(steps) < limit:
        if not 0 <= state.depth <= MAX_STACK_EFFECT or any(
                offset >= 0 for offset in state.saved.values()):
            # No prologue moves rsp above its entry value, or megabytes down, or saves a
            # register over the return address: these bytes are no code we know.
            return steps, pos
        steps.append(StackEffect(pos, state.depth, tuple(sorted(state.saved.items())),
                          tuple(sorted(state.clobbered & set(CALLEE_SAVED)))))
        op_at = pos
        rex = 0
        if code[op_at] in (0xF2, 0xF3) and code[op_at + 1:op_at + 2] == b"\xc3":
            return steps, op_at + 2  # rep ret
        if 0x40 <= code[op_at] <= 0x4F and op_at + 1 < len(code):
            rex = code[op_at]
            op_at += 1
        op = code[op_at]
        if op == 0xC3 and not rex:
            return steps, op_at + 1
        if op == 0xC9 and not rex:  # leave: mov rsp, rbp; pop rbp
            if state.frame_pointer_depth is None or "rbp" not in state.saved:
                break
            state.depth = state.frame_pointer_depth - 8
            state.saved.pop("rbp")
            pos = op_at + 1
            continue
        if 0x58 <= op <= 0x5F:  # pop: a saved register popped from its slot is restored
            name = REGISTERS[(op - 0x58) | ((rex & 1) << 3)]
            if state.saved.get(name) == -state.depth:
                state.saved.pop(name)
                state.depth -= 8
                pos = op_at + 1
                continue
        try:
            pos = _step(code, pos, sim)
        except DecodeError:
            break
        if sim.jump_target is not None:
            return steps, pos
    return steps, pos
