"""Mutations of a recorded core, chosen by a seeded random generator.

Each mutation is aimed at what a walk reads: the frame-pointer chain and return slots of
the intact walk's frames, frame 0's registers, the JIT code the walk decoded, the core's
length, the stack in general, and for CPython the interpreter-frame chain, code objects,
``_Py_DebugOffsets``, runtime structures and JIT executors.  ``mutation_for(subject,
seed)`` is a pure function of its arguments: a case is reproduced from its seed.
"""

import random
import struct
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from jit_unwind.cpython.executors import read_executors
from jit_unwind.stop.cache import StopCache
from tests.fuzz.coremodel import CoreMemory
from tests.fuzz.harness import Mutation, Subject

KERNEL = 0xFFFF800000000000


@dataclass
class Targets:
    """What the intact core offers to aim at."""

    stack: Tuple[int, int]            # the stack segment held by the core
    walked_top: int                   # sp of the outermost frame of the intact walk
    frames: List[Dict[str, int]]      # registers of each frame of the intact walk
    jit: List[Tuple[int, int]]        # JIT regions the core holds bytes of
    text: List[Tuple[int, int]]       # executable file mappings
    jit_pcs: List[int]                # pcs of the intact walk's JIT frames
    python: Optional[dict]            # CPython structures (see _python_targets)
    jit_interface: Optional[dict] = None  # GDB's JIT interface (see _jit_interface_targets)


def targets_of(subject: Subject) -> Targets:
    cached = getattr(subject, "_targets", None)
    if cached is not None:
        return cached
    image = subject.image
    stack = image.stack_segment()
    frames = subject.frame_registers
    walked_top = max((f.get("rsp", 0) for f in frames), default=stack.start) + 64
    with subject.perf_map_installed(None):
        process = subject.process(CoreMemory(image), Mutation("none", ""))
        regions = process.cache.regions()
        jit = [(r.start, r.end) for r in regions.jit
               if image.segment_at(r.start) is not None]
        text = [(m.start, m.end) for m in regions.mappings if m.executable and m.path
                .startswith("/")]
        jit_pcs = [f.pc for f in subject.reference.frames if f.kind.value == "jit"]
        python = _python_targets(subject, process) if subject.recorded.python else None
        interface = _jit_interface_targets(process)
    subject._targets = Targets((stack.start, stack.end), min(walked_top, stack.end), frames,
                               jit, text, jit_pcs, python, interface)
    return subject._targets


def _jit_interface_targets(process) -> Optional[dict]:
    """``__jit_debug_descriptor``, its entries and their in-memory ELF files."""
    descriptor = process.symbol_address("__jit_debug_descriptor")
    if descriptor is None:
        return None
    entries = []
    entry = process.memory.try_read_u64(descriptor + 16)
    while entry and len(entries) < 100:
        words = process.memory.try_read(entry, 32)
        if words is None:
            break
        following, _previous, symfile, size = struct.unpack("<QQQQ", words)
        entries.append((entry, symfile, size))
        entry = following
    return {"descriptor": descriptor, "entries": entries}


def gdb_jit(rng, t: Targets) -> Optional[Mutation]:
    """GDB's JIT interface garbled: the descriptor, an entry (next, symfile address,
    size) or bytes of a registered ELF file (its header, section headers, anywhere)."""
    interface = t.jit_interface
    if not interface or not interface["entries"]:
        return None
    entry, symfile, size = rng.choice(interface["entries"])
    choice = rng.randrange(4)
    if choice == 0:
        slot = interface["descriptor"] + 8 * rng.randrange(3)
        where = "descriptor"
    elif choice == 1:
        slot = entry + 8 * rng.choice([0, 2, 3])
        where = f"entry {entry:#x}"
    else:
        patches = {}
        for _ in range(rng.randrange(1, 17)):
            offset = rng.randrange(64) if choice == 2 else rng.randrange(max(size, 1))
            patches[symfile + offset] = bytes([rng.getrandbits(8)])
        return Mutation("gdb-jit", f"ELF file {symfile:#x}+{size:#x}: " + ", ".join(
            f"+{a - symfile:#x}={b[0]:#04x}" for a, b in sorted(patches.items())), patches)
    value = nasty_value(rng, t) if rng.random() < 0.7 else rng.choice([entry, symfile, 1 << 40])
    return Mutation("gdb-jit", f"{where}: [{slot:#x}] = {value:#x}", {slot: _word(value)})


def _python_targets(subject: Subject, process) -> Optional[dict]:
    cache: StopCache = process.cache
    runtime, _reason = cache.python_runtime()
    if runtime is None:
        return None
    thread = cache.python_thread(process.threads()[0].native_id)
    layout = runtime.layout
    interps, _ = runtime.interpreter_addresses()
    tstates = [t for i in interps for t in runtime.thread_state_addresses(i)[0]]
    executors = []
    if runtime.version.minor_version >= (3, 13):
        try:
            executors = [e.address for e in read_executors(process.memory, runtime, None,
                                                           cache.lookup_symbol).executors]
        except Exception:  # no executors to aim at
            executors = []
    frames = list(thread.frames) if thread is not None else []
    records = runtime.raw_frames(runtime.current_frame(thread.address))[0] if thread else []
    return {
        "runtime": runtime.address,
        "debug_offsets": runtime.version.minor_version >= (3, 13),
        "interps": interps,
        "tstates": tstates,
        "records": [r.address for r in records],
        "codes": sorted({f.code_address for f in frames if f.code_address}),
        "executors": executors,
        "previous": layout.frame_previous,
        "executable": layout.frame_executable,
        "owner": layout.frame_owner,
        "instr_ptr": layout.frame_instr_ptr,
        "tstate_frame": layout.tstate_frame,
    }


def _word(value: int) -> bytes:
    return struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF)


def nasty_value(rng: random.Random, t: Targets) -> int:
    """A value a corrupted word might hold: anything from 0 to a plausible pointer."""
    kind = rng.randrange(10)
    if kind == 0:
        return rng.choice([0, 1, 8, 16, 0xFFFFFFFFFFFFFFFF, 0x4141414141414141, KERNEL,
                           0x7FFFFFFFFFFF, 1 << 63])
    if kind == 1:  # on the stack, maybe misaligned, maybe below sp
        return rng.randrange(t.stack[0] - 0x100, t.stack[1] + 0x100)
    if kind == 2:  # aligned on the stack, within the walked part
        return rng.randrange(t.stack[0], t.walked_top) & ~7
    if kind == 3 and t.jit:
        start, end = rng.choice(t.jit)
        return rng.randrange(start, end)
    if kind == 4 and t.text:
        start, end = rng.choice(t.text)
        return rng.randrange(start, end)
    if kind == 5:
        return rng.randrange(0, 1 << 16)
    if kind == 6 and t.frames:  # a real return address or frame pointer, out of place
        frame = rng.choice(t.frames)
        return frame.get(rng.choice(["rip", "rbp", "rsp"]), 0)
    if kind == 7:
        return rng.getrandbits(48)
    return rng.getrandbits(64)


def _frame(rng, t: Targets, first: int = 0) -> Optional[int]:
    if len(t.frames) <= first:
        return None
    return rng.randrange(first, len(t.frames))


# -- the mutations ------------------------------------------------------------------------

def fp_cycle(rng, t: Targets) -> Optional[Mutation]:
    """A saved rbp pointing at itself, at an inner frame's, or below: a cycle."""
    candidates = [f["rbp"] for f in t.frames
                  if t.stack[0] <= f.get("rbp", 0) < t.stack[1] - 8]
    if not candidates:
        return None
    slot = rng.choice(candidates)
    inner = [rbp for rbp in candidates if rbp <= slot]
    target = rng.choice([slot, rng.choice(inner), slot - 16, slot - 8 * rng.randrange(1, 64)])
    return Mutation("fp-cycle", f"[{slot:#x}] = {target:#x}", {slot: _word(target)})


def unmapped_pointer(rng, t: Targets) -> Optional[Mutation]:
    """A return slot or saved rbp pointing into unmapped memory."""
    index = _frame(rng, t, 1)
    if index is None:
        return None
    registers = t.frames[index]
    slot = rng.choice([registers["rsp"] - 8, t.frames[index - 1].get("rbp", registers["rsp"]
                                                                       - 16)])
    value = rng.choice([0x10, 0x1000, 0xDEADBEEF000, 0x7FFFFFFFF000, KERNEL + 0x1000,
                        t.stack[1] + 0x1000, t.stack[0] - 0x1000, rng.getrandbits(47)])
    return Mutation("unmapped-pointer", f"[{slot:#x}] = {value:#x} (frame {index})",
                    {slot: _word(value)})


def misaligned_or_decreasing(rng, t: Targets) -> Optional[Mutation]:
    """A saved rbp made misaligned or lower than its frame; or frame 0's sp/rbp so."""
    if rng.random() < 0.5 and t.frames:
        registers = t.frames[0]
        name = rng.choice(["rsp", "rbp"])
        delta = rng.choice([rng.randrange(1, 8), -8 * rng.randrange(1, 512),
                            -rng.randrange(1, 4096), 8 * rng.randrange(1, 64) + 4])
        value = registers.get(name, 0) + delta
        return Mutation("misaligned-sp", f"frame 0 {name} {delta:+d}",
                        registers={name: value & 0xFFFFFFFFFFFFFFFF})
    candidates = [f["rbp"] for f in t.frames if t.stack[0] <= f.get("rbp", 0) < t.stack[1]]
    if not candidates:
        return None
    slot = rng.choice(candidates)
    value = slot + rng.choice([rng.randrange(1, 8), -rng.randrange(8, 4096), 3])
    return Mutation("misaligned-rbp", f"[{slot:#x}] = {value:#x}", {slot: _word(value)})


def random_registers(rng, t: Targets) -> Optional[Mutation]:
    """Frame 0's registers replaced by nasty values."""
    names = rng.sample(["rip", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15"],
                       rng.randrange(1, 4))
    registers = {name: nasty_value(rng, t) for name in names}
    detail = ", ".join(f"{k}={v:#x}" for k, v in registers.items())
    return Mutation("registers", detail, registers=registers)


def return_slot(rng, t: Targets) -> Optional[Mutation]:
    """A frame's return address replaced (random, JIT code, library code, another's)."""
    index = _frame(rng, t, 1)
    if index is None:
        return None
    slot = t.frames[index]["rsp"] - 8
    value = nasty_value(rng, t)
    return Mutation("return-slot", f"[{slot:#x}] = {value:#x} (frame {index})",
                    {slot: _word(value)})


def jit_code(rng, t: Targets) -> Optional[Mutation]:
    """Bytes of JIT code replaced: near a pc the walk decoded, or a whole region."""
    if not t.jit:
        return None
    choice = rng.randrange(4)
    if choice == 0:
        start, end = rng.choice(t.jit)
        size = min(end - start, 1 << 16)
        fill = rng.choice(["random", "int3", "zero", "ret"])
        data = (bytes(rng.getrandbits(8) for _ in range(size)) if fill == "random" else
                {"int3": b"\xcc", "zero": b"\x00", "ret": b"\xc3"}[fill] * size)
        return Mutation("jit-code", f"{size:#x} bytes at {start:#x} = {fill}", {start: data})
    patches = {}
    centre = rng.choice(t.jit_pcs) if t.jit_pcs else rng.randrange(*rng.choice(t.jit))
    for _ in range(rng.randrange(1, 17)):
        address = centre + rng.randrange(-96, 32)
        patches[address] = bytes([rng.getrandbits(8)])
    detail = ", ".join(f"{a:#x}={b[0]:#04x}" for a, b in sorted(patches.items()))
    return Mutation("jit-code", f"bytes near {centre:#x}: {detail}", patches)


def truncated(rng, t: Targets, size: int, stack_offset: int) -> Optional[Mutation]:
    """The core cut short: anywhere, or inside the stack segment."""
    if rng.random() < 0.6:
        cut = stack_offset + rng.randrange(0, max(t.walked_top - t.stack[0], 8))
    else:
        cut = rng.randrange(0, size)
    return Mutation("truncated", f"file cut at offset {cut:#x} of {size:#x}", cut=cut)


def stack_words(rng, t: Targets) -> Optional[Mutation]:
    """1-32 random words anywhere between frame 0's sp and the walked stack's top."""
    sp = t.frames[0]["rsp"] if t.frames else t.stack[0]
    low = max(t.stack[0], sp - 64)
    slots = max((t.walked_top - low) // 8, 1)
    patches = {}
    for _ in range(rng.randrange(1, 33)):
        patches[low + 8 * rng.randrange(slots)] = _word(nasty_value(rng, t))
    detail = ", ".join(f"{a:#x}={int.from_bytes(v, 'little'):#x}"
                       for a, v in sorted(patches.items()))
    return Mutation("stack-words", detail, patches)


def anywhere(rng, t: Targets, subject: Subject) -> Optional[Mutation]:
    """Random words in random segments of the core (heap, data, stacks, code)."""
    segments = subject.image.segments
    patches = {}
    for _ in range(rng.randrange(1, 65)):
        segment = rng.choice(segments)
        patches[segment.start + 8 * rng.randrange((segment.end - segment.start) // 8)] = \
            _word(nasty_value(rng, t))
    return Mutation("anywhere", f"{len(patches)} words in {len(segments)} segments: "
                    + ", ".join(f"{a:#x}" for a in sorted(patches)), patches)


def combined(rng, t: Targets, makers) -> Optional[Mutation]:
    """Two to four mutations at once (patches merged; registers and cut kept)."""
    parts = [m for m in (rng.choices(makers, [w for w, _ in makers])[0][1]()
                         for _ in range(rng.randrange(2, 5))) if m is not None]
    if not parts:
        return None
    result = Mutation("combined", " + ".join(f"({p})" for p in parts))
    for part in parts:
        result.patches.update(part.patches)
        result.registers.update(part.registers)
        if part.cut is not None:
            result.cut = part.cut if result.cut is None else min(result.cut, part.cut)
        if part.perf_map is not None:
            result.perf_map = part.perf_map
    return result


def py_chain(rng, t: Targets) -> Optional[Mutation]:
    """An interpreter frame's ``previous`` made a cycle or garbage, or its owner,
    executable (code object) or instruction pointer garbage."""
    py = t.python
    if not py or not py["records"]:
        return None
    index = rng.randrange(len(py["records"]))
    record = py["records"][index]
    field = rng.choice(["previous", "previous", "executable", "owner", "instr_ptr"])
    address = record + py[field]
    if field == "previous":
        value = rng.choice([record, rng.choice(py["records"][:index + 1]), record + 4,
                            nasty_value(rng, t)])
        data = _word(value)
    elif field == "owner":
        value = rng.getrandbits(8)
        data = bytes([value])
    elif field == "executable":
        value = rng.choice([record, nasty_value(rng, t), py["runtime"],
                            rng.choice(py["codes"] or [0]) + 8 * rng.randrange(1, 8),
                            rng.choice(py["records"]) | rng.randrange(4)])
        data = _word(value)
    else:
        value = nasty_value(rng, t)
        data = _word(value)
    return Mutation("py-chain", f"record {index} at {record:#x}: {field} = {value:#x}",
                    {address: data})


def py_code(rng, t: Targets) -> Optional[Mutation]:
    """Words of a code object (its type, sizes, pointers to names and line table)."""
    py = t.python
    if not py or not py["codes"]:
        return None
    code = rng.choice(py["codes"])
    patches = {code + 8 * rng.randrange(0, 26): _word(nasty_value(rng, t))
               for _ in range(rng.randrange(1, 5))}
    detail = ", ".join(f"+{a - code:#x}={int.from_bytes(v, 'little'):#x}"
                       for a, v in sorted(patches.items()))
    return Mutation("py-code", f"code object {code:#x}: {detail}", patches)


def debug_offsets(rng, t: Targets) -> Optional[Mutation]:
    """``_Py_DebugOffsets`` with a wrong cookie, version or absurd values (3.13+);
    the head of ``_PyRuntime`` otherwise."""
    py = t.python
    if not py:
        return None
    runtime = py["runtime"]
    choice = rng.randrange(3)
    if choice == 0 and py["debug_offsets"]:
        position = rng.randrange(8)
        return Mutation("debug-offsets", f"cookie byte {position} flipped",
                        {runtime + position: bytes([rng.getrandbits(8) | 0x80])})
    patches = {}
    for _ in range(rng.randrange(1, 6)):
        slot = runtime + 8 * rng.randrange(1, 96)
        patches[slot] = _word(rng.choice([0, 0xFFFFFFFFFFFFFFFF, 1 << 40, rng.randrange(1, 8),
                                          rng.getrandbits(32), 0x7FFFFFFF, 0x10000000]))
    detail = ", ".join(f"+{a - runtime:#x}={int.from_bytes(v, 'little'):#x}"
                       for a, v in sorted(patches.items()))
    return Mutation("debug-offsets", f"_PyRuntime words {detail}", patches)


def runtime_words(rng, t: Targets) -> Optional[Mutation]:
    """Random words of an interpreter, a thread state or a JIT executor."""
    py = t.python
    if not py:
        return None
    bases = ([("interp", a, 0x400) for a in py["interps"]]
             + [("tstate", a, 0x200) for a in py["tstates"]]
             + [("executor", a, 0x100) for a in py["executors"]])
    what, base, size = rng.choice(bases)
    patches = {base + 8 * rng.randrange(size // 8): _word(nasty_value(rng, t))
               for _ in range(rng.randrange(1, 9))}
    detail = ", ".join(f"+{a - base:#x}={int.from_bytes(v, 'little'):#x}"
                       for a, v in sorted(patches.items()))
    return Mutation("runtime-words", f"{what} {base:#x}: {detail}", patches)


def perf_map(rng, t: Targets, text: str) -> Optional[Mutation]:
    """The perf map garbled: lines dropped, numbers changed, overlaps, junk."""
    lines = text.splitlines()
    out = []
    for line in lines:
        roll = rng.random()
        if roll < 0.2:
            continue
        if roll < 0.5:
            fields = line.split(None, 2)
            if len(fields) == 3:
                fields[rng.randrange(2)] = f"{nasty_value(rng, t):x}"
                line = " ".join(fields)
        out.append(line)
    for _ in range(rng.randrange(0, 4)):
        start = nasty_value(rng, t)
        out.insert(rng.randrange(len(out) + 1),
                   rng.choice([f"{start:x} {rng.getrandbits(20):x} junk{rng.random()}",
                               "\x00\xff garbage", f"{start:x} 0 empty", f"zz {start:x} x"]))
    return Mutation("perf-map", f"{len(out)} lines (of {len(lines)})",
                    perf_map="\n".join(out))


def mutation_for(subject: Subject, seed: int) -> Mutation:
    """The mutation of case ``seed`` on ``subject`` (deterministic)."""
    t = targets_of(subject)
    rng = random.Random(f"{subject.name}:{seed}")
    size = len(subject.image.data)
    stack_segment = subject.image.stack_segment()
    makers: List[Tuple[float, Callable[[], Optional[Mutation]]]] = [
        (3, lambda: fp_cycle(rng, t)),
        (3, lambda: unmapped_pointer(rng, t)),
        (2, lambda: misaligned_or_decreasing(rng, t)),
        (2, lambda: random_registers(rng, t)),
        (4, lambda: return_slot(rng, t)),
        (3, lambda: jit_code(rng, t)),
        (1, lambda: truncated(rng, t, size, stack_segment.offset)),
        (5, lambda: stack_words(rng, t)),
        (1, lambda: perf_map(rng, t, subject.perf_map)),
    ]
    if t.jit_interface:
        makers.append((6, lambda: gdb_jit(rng, t)))
    if t.python:
        makers += [(4, lambda: py_chain(rng, t)), (2, lambda: py_code(rng, t)),
                   (2, lambda: debug_offsets(rng, t)), (2, lambda: runtime_words(rng, t))]
    makers.append((2, lambda: anywhere(rng, t, subject)))
    single = list(makers)
    makers.append((3, lambda: combined(rng, t, single)))
    weights = [w for w, _ in makers]
    for _ in range(20):
        maker = rng.choices(makers, weights)[0][1]
        mutation = maker()
        if mutation is not None:
            return mutation
    return stack_words(rng, t)
