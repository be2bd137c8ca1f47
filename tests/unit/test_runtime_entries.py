"""Runtime entry records (unwind/runtime_entries.py) for entry code that runs from a
second, file-backed mapping of its file's code, as V8 maps node's embedded builtins near
its JIT code: the entry frame is recognised by the file's symbol at that mapping's
offset, in GDB's path (one frame, ``unwind_nocfi_code``) and in the shared walk
(``thread_walk``, LLDB's), where the debugger names no code there.

node 20 (V8 11.3) calls its JSEntry from C++ at the builtin's address in node's own
mapping (its builtins' Code objects point there; only JIT code and the builtins it
calls run from the copy), so no real stack shows this here yet; the layout below is
V8's (``Generate_JSEntryVariant``), in a small library built at test time with no CFI.
"""

import contextlib
import struct
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.debugger import Process, Symbol
from jit_unwind.unwind.native_step import unwind_nocfi_code
from jit_unwind.model import UnwindMethod
from jit_unwind.regions import Mapping, RegionMap
from jit_unwind.regions.nocfi_pc import function_in
from jit_unwind.stop.cache import StopCache
from jit_unwind.target import BytesMemory
from jit_unwind.stack.thread_walk import ThreadWalk

from .test_thread_walk import InputFrame

# The native caller keeps a frame pointer and calls the entry code; the entry code
# saves the caller's registers as V8's JSEntry does (rbp, the frame type marker, the
# context, then r12, r13, r14, r15, rbx; then more, which no prologue decoder follows)
# and calls the JIT code.  No .cfi directives:
# no FDE, as node's builtins have none.
SOURCE = """
        .intel_syntax noprefix
        .text
        .fill   16, 1, 0xcc     # the return addresses' calls are read from before them
        .globl  invoke
        .type   invoke, @function
invoke:
        push    rbp
        mov     rbp, rsp
        call    rax
        .globl  invoke_return
invoke_return:
        pop     rbp
        ret
        .size   invoke, . - invoke
        .globl  Builtins_JSEntry
        .type   Builtins_JSEntry, @function
Builtins_JSEntry:
        push    rbp
        mov     rbp, rsp
        push    2
        push    0
        push    r12
        push    r13
        push    r14
        push    r15
        push    rbx
        mov     r13, rdi
        push    qword ptr [r13 + 0x100]
        push    0
        call    rdi
        .globl  jsentry_return
jsentry_return:
        add     rsp, 8
        pop     qword ptr [r13 + 0x100]
        pop     rbx
        pop     r15
        pop     r14
        pop     r13
        pop     r12
        add     rsp, 16
        pop     rbp
        ret
        .size   Builtins_JSEntry, . - Builtins_JSEntry
        .section .note.GNU-stack, "", @progbits
"""

BIAS = 0x7F00_0000_0000  # where the library is loaded
COPY = 0x7E00_0000_0000  # the second mapping of its code, elsewhere
JIT = 0x7D00_0000_0000
STACK = 0x7FFF_0000_0000
NO_SUCH_PID = 2 ** 22 + 19  # above pid_max: no /tmp/perf-PID.map

# What the native caller had in its callee-saved registers (saved by the entry code),
# and what the JIT code left in them.
CALLER = {"r12": 0x1212, "r13": 0x1313, "r14": 0x1414, "r15": 0x1515, "rbx": 0xB0B0}
CLOBBERED = {name: 0xDEAD0000 + i for i, name in enumerate(CALLER)}
OFFSETS = {"r12": -24, "r13": -32, "r14": -40, "r15": -48, "rbx": -56}


class Library:
    """The built library: its symbols, its code's mapping, and both mappings of it."""

    def __init__(self, path):
        self.path = str(path)
        with open(path, "rb") as handle:
            elf = ELFFile(handle)
            self.symbols = {s.name: (s["st_value"], s["st_size"])
                            for s in elf.get_section_by_name(".symtab").iter_symbols()}
            loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        text = next(s for s in loads if s["p_flags"] & 1)
        self.text_offset = text["p_offset"] & ~0xFFF
        self.text_start = BIAS + (text["p_vaddr"] & ~0xFFF)
        self.text_end = BIAS + ((text["p_vaddr"] + text["p_memsz"] + 0xFFF) & ~0xFFF)
        with open(path, "rb") as handle:
            handle.seek(self.text_offset)
            self.code = handle.read(self.text_end - self.text_start).ljust(
                self.text_end - self.text_start, b"\0")
        self.mappings = [
            Mapping(BIAS + (s["p_vaddr"] & ~0xFFF),
                    BIAS + ((s["p_vaddr"] + s["p_memsz"] + 0xFFF) & ~0xFFF),
                    "r-xp" if s["p_flags"] & 1 else "r--p", self.path, s["p_offset"] & ~0xFFF)
            for s in loads] + [
            Mapping(COPY, COPY + len(self.code), "r-xp", self.path, self.text_offset)]

    def loaded(self, name):
        return BIAS + self.symbols[name][0]

    def copied(self, name):
        """``name``'s address in the second mapping."""
        return COPY + self.loaded(name) - self.text_start


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    directory = tmp_path_factory.mktemp("entry")
    (directory / "entry.S").write_text(SOURCE)
    path = directory / "libentry.so"
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", str(path),
                    str(directory / "entry.S")], check=True)
    return Library(path)


def _entry_frame_stack(library, base):
    """The stack above the entry frame whose rbp is ``base``: the caller's frame record
    and the registers the entry code saved."""
    words = {base: STACK + 0x800, base + 8: library.loaded("invoke_return"),
             **{base + OFFSETS[name]: value for name, value in CALLER.items()}}
    stack = bytearray(0x1000)
    for address, value in words.items():
        struct.pack_into("<Q", stack, address - STACK, value)
    return stack


def test_entry_code_in_a_second_mapping_of_its_file_is_known_by_its_symbol(library):
    """GDB's path: the frame's function from the file's symbols at the copy's offset,
    then the entry record: the caller's pc, sp and saved registers, exactly."""
    base = STACK + 0x400
    memory = BytesMemory({library.text_start: library.code, COPY: library.code,
                          STACK: bytes(_entry_frame_stack(library, base))})
    regions = RegionMap(library.mappings)
    registers = {"rbp": base, **CLOBBERED}
    for pc in (library.copied("jsentry_return"), library.loaded("jsentry_return")):
        region = regions.nocfi_at(pc - 1)
        assert region is not None, hex(pc)
        function = function_in(region, pc - 1)
        assert function.name == "Builtins_JSEntry"
        result = unwind_nocfi_code(pc, base - 72, memory, regions, registers.get, False,
                                   lambda _address: None, function)
        assert result is not None and result.method == UnwindMethod.ENTRY_RECORD
        assert (result.caller_pc, result.caller_sp) == (library.loaded("invoke_return"),
                                                        base + 16)
        assert result.saved == {"rbp": STACK + 0x800, **CALLER}


class _Process(Process):
    """A debugger that knows the library's own mapping as a module, not the copy."""

    debugger_name = "FakeDB"

    def __init__(self, library, memory):
        self.library, self.memory = library, memory

    def pid(self):
        return NO_SUCH_PID

    def key(self):
        return (1, NO_SUCH_PID)

    def connection(self):
        return "remote"

    def core_file(self):
        return None

    def debugger_mappings(self):
        return self.library.mappings + [Mapping(JIT, JIT + 0x1000, "rwxp", ""),
                                        Mapping(STACK, STACK + 0x1000, "rw-p", "[stack]")]

    def module_paths(self):
        return [self.library.path]

    def threads(self):
        return []

    def selected_thread(self):
        return None

    def symbol_address(self, name):
        return None

    def member_offset(self, type_name, member_path):
        return None

    def symbol_at(self, address):
        start, size = self.library.symbols["invoke"]
        if BIAS + start <= address < BIAS + start + size:
            return Symbol("main", BIAS + start, BIAS + start + size)  # the walk ends there
        return None

    def function_start(self, address):
        symbol = self.symbol_at(address)
        return symbol.start if symbol is not None else None

    def keep_selection(self):
        return contextlib.nullcontext()


def test_the_shared_walk_resumes_at_the_entry_record_in_a_second_mapping(library):
    """LLDB's path: the JIT frame returns into the entry code's copy, which no module
    holds; the walk names it from the file and unwinds it by its record, so its caller
    gets the registers the entry code saved, not the JIT code's."""
    base = STACK + 0x400
    jit_rbp = base - 72 - 16  # the JIT frame's record: the entry frame's sp above it
    stack = _entry_frame_stack(library, base)
    struct.pack_into("<QQ", stack, jit_rbp - STACK, base, library.copied("jsentry_return"))
    jit_code = bytes.fromhex("554889e5" "ffd0").ljust(0x1000, b"\0")  # push rbp; ...; call rax
    memory = BytesMemory({library.text_start: library.code, COPY: library.code,
                          JIT: jit_code, STACK: bytes(stack)})
    cache = StopCache(_Process(library, memory))
    # the debugger's only frame: JIT code that keeps a frame pointer, stopped
    frame = InputFrame(0, JIT + 6, jit_rbp - 8, rbp=jit_rbp, **CLOBBERED)
    steps = ThreadWalk(cache, [frame]).run()
    listing = [(step.index, hex(step.pc or 0), step.jit, step.note) for step in steps]
    assert [step.pc for step in steps] == [
        JIT + 6, library.copied("jsentry_return"), library.loaded("invoke_return")], listing
    caller = steps[-1].registers
    assert {name: caller.get(name) for name in CALLER} == CALLER, listing
    assert (caller["rsp"], caller["rbp"]) == (base + 16, STACK + 0x800)
