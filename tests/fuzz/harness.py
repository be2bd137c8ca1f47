"""Run the core's walk over a recorded core with one mutation, and check it.

A case is (subject, seed): the seed picks a mutation (:mod:`tests.fuzz.mutations`), the
mutation is laid over the core's memory (or its registers, its perf map, its length),
and what a debugger adapter would do is run on it: the native walk of the first thread
(``stack.walk`` over :class:`~tests.fuzz.coremodel.CoreProcess`, JIT frames unwound by
``unwind_jit_frame``), ``bt``'s labels (``stack.jit_label``), the Python thread
(``StopCache.python_thread``), ``py-mixed-bt --all-threads --json`` and ``info
jit-regions``.  Checks, for every case:

- no exception escapes those entry points (a :class:`CommandError` is the commands'
  designed way to refuse and counts as handled);
- the walk ends within the frame budget (below the test debugger's backtrace limit, and
  within one frame per stack word) and the time budget;
- the walk's end has a stated reason: the core's or the debugger's, or a natural end
  (``main``, an outermost frame by its call frame information, a zero return address);
- nothing true is lost.  The walk is deterministic, so it goes exactly as on the intact
  core until its first read whose result the mutation changed.  Every read of the
  intact walk is recorded with the level of the frame being made when it happened
  ("frame L is made" = its caller found and itself described; reads before frame 0
  count as level 0).  With L the level of the first read the mutation changes, frames
  0..L-1 must come out identical (level, kind, pc, name, marks, method), and the whole
  walk when no read changes.  Python frames likewise: frame i (from interpreter frame
  record j) depends on the reads before the record chain, of records 0..j+1 and of the
  code objects of frames 0..i; the frames whose dependencies are unchanged must come out
  identical.
"""

import json
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import jsonschema

from jit_unwind.commands import CommandError
from jit_unwind.commands.jit_regions import jit_regions
from jit_unwind.commands.mixed_bt import py_mixed_bt
from jit_unwind.regions import discovery
from jit_unwind.regions.perfmap import parse_perf_map
from jit_unwind.stop.cache import StopCache
from jit_unwind.stack.frames import jit_label, walk
from tests.fuzz.coremodel import MAX_NATIVE_FRAMES, CoreImage, CoreMemory, CoreProcess
from tests.fuzz.cores import RecordedCore
from tests.support import REPO

SCHEMA = json.loads((REPO / "docs" / "py-mixed-bt.schema.json").read_text())
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)  # checked once
# Seconds of CPU time per case (the process's own: other load on the machine does not
# count); the longest case is reported.
TIME_BUDGET = 1.0
HANG_LIMIT = 20.0  # a case still running after this is a hang
# A debugger allocates what a read asks for, and each read costs a round trip (more on
# a remote target): one read above this size, or more reads per case, is a failure.
MAX_READ = 64 << 20
MAX_READS = 200_000


class Hang(BaseException):
    """Raised by the watchdog into a case that runs too long (BaseException: the core's
    ``except Exception`` must not swallow it)."""


@dataclass
class Mutation:
    """One corruption: memory ``patches`` ({address: bytes}), a truncation at file
    offset ``cut``, overridden frame-0 ``registers``, or another perf map."""

    kind: str
    detail: str
    patches: Dict[int, bytes] = field(default_factory=dict)
    cut: Optional[int] = None
    registers: Dict[str, int] = field(default_factory=dict)
    perf_map: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass
class Walked:
    """What one run produced."""

    frames: list
    reason: str
    natural_end: bool
    labels: list
    python: Optional[tuple]  # the first thread's Python frames, None without
    python_reason: str
    mixed_json: Optional[str]
    regions_text: str
    native_trace: list
    python_trace: list
    python_records: list  # per Python frame: its record index
    seconds: float
    plain: list  # (level, pc) of the debugger's own frames up to its first in JIT code
    reads: int = 0  # memory reads of the whole case
    largest_read: int = 0


@dataclass
class Failure:
    subject: str
    seed: int
    mutation: str
    problem: str

    def __str__(self) -> str:
        return (f"{self.subject} seed={self.seed} [{self.mutation}]: {self.problem}\n"
                f"  reproduce: make fuzz FUZZ_SUBJECTS={self.subject} FUZZ_SEED={self.seed} "
                f"FUZZ_COUNT=1 FUZZ_E2E=0")


@contextmanager
def watchdog(seconds: float):
    def fire(_signum, _frame):
        raise Hang(f"still running after {seconds} s")
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Subject:
    """A recorded core, parsed once, and its intact walk (the reference)."""

    def __init__(self, recorded: RecordedCore):
        self.recorded = recorded
        self.name = recorded.name
        self.image = CoreImage(recorded.core)
        self.perf_map = (recorded.perf_map.read_text() if recorded.perf_map.exists()
                         else "")
        self.reference = self.run(Mutation("none", "intact core"), trace=True)
        self.frame_registers = self._frame_registers()

    def process(self, memory: CoreMemory, mutation: Mutation,
                plain: bool = False) -> CoreProcess:
        process = CoreProcess(self.image, memory, self.recorded.pid, plain=plain,
                              debug_symbols=self.recorded.debug_symbols)
        if mutation.registers and process.threads():
            state = process.threads()[0].state
            state.registers = {**state.registers, **mutation.registers}
        process.cache = StopCache(process)
        return process

    def _frame_registers(self) -> List[Dict[str, int]]:
        """Each reference frame's registers, as the test debugger unwound them."""
        with self.perf_map_installed(None):
            process = self.process(CoreMemory(self.image), Mutation("none", ""))
            registers = []
            frame = process.threads()[0].newest_frame() if process.threads() else None
            while frame is not None and len(registers) < MAX_NATIVE_FRAMES:
                registers.append(dict(frame.registers))
                frame = frame.older()
        return registers

    @contextmanager
    def perf_map_installed(self, text: Optional[str]):
        """The core's perf map as the process left it (or ``text``), read by the core
        from here instead of /tmp, where another process may own the pid now: a file
        there (newer than the core) must not make the core's own map "stale" mid-run."""
        entries = parse_perf_map(self.perf_map if text is None else text)
        original = discovery.read_perf_map, discovery.stale_perf_map
        discovery.read_perf_map = lambda *_args: entries
        discovery.stale_perf_map = lambda *_args: ""
        try:
            yield
        finally:
            discovery.read_perf_map, discovery.stale_perf_map = original

    def run(self, mutation: Mutation, trace: bool = False) -> Walked:
        """Everything an adapter would do, on the core with ``mutation``.  Exceptions
        from the core's entry points propagate (they are the failures looked for)."""
        # Fresh per-registers state: the CoreImage's threads are shared.
        saved = [dict(t.registers) for t in self.image.threads]
        try:
            with self.perf_map_installed(mutation.perf_map):
                return self._run(mutation, trace)
        finally:
            for state, registers in zip(self.image.threads, saved):
                state.registers = registers

    def _run(self, mutation: Mutation, trace: bool) -> Walked:
        start = time.process_time()
        memories: List[CoreMemory] = []

        def fresh_memory(traced: bool = False) -> CoreMemory:
            """The mutated core's memory for one more stop (each kept for its counts)."""
            memories.append(CoreMemory(self.image, mutation.patches, mutation.cut, traced))
            return memories[-1]
        memory = fresh_memory(trace)
        # 1. The native walk (bt, py-mixed-bt's native part): a fresh stop.
        process = self.process(memory, mutation)
        threads = process.threads()
        frames, reason, natural, labels = [], "no thread", False, []
        if threads:
            recording = _Recording(threads[0], process.cache)
            frames, reason = walk(recording, process.cache)
            recording.label_last()
            made = recording.made
            natural = bool(made) and made[-1].natural_end and not reason
            labels = recording.labels[:len(frames)]
        native_trace = memory.trace if trace else []
        # The debugger's own walk, without jit-unwind: what bt must keep.
        process = self.process(fresh_memory(), mutation, plain=True)
        plain = process.plain_walk()
        plain_end = next((i for i, (_, pc) in enumerate(plain)
                          if pc is not None and process.cache.regions().jit_region_at(
                              pc if i == 0 else pc - 1)), len(plain) - 1)
        plain = plain[:plain_end + 1]
        # 2. The Python thread, with its reads recorded per record and per frame.
        python, python_reason, python_trace, records = None, "", [], []
        mixed_json = None
        if self.recorded.python and threads:
            memory = fresh_memory(trace)
            process = self.process(memory, mutation)
            python, python_reason, records = _python_thread(process, memory)
            python_trace = memory.trace if trace else []
            # 3. py-mixed-bt --all-threads --json on a fresh stop.
            process = self.process(fresh_memory(), mutation)
            try:
                mixed_json = py_mixed_bt(process, process.cache, ["--all-threads", "--json"])
            except CommandError as error:
                mixed_json = None
                python_reason = python_reason or f"py-mixed-bt: {error}"
        # 4. info jit-regions.
        process = self.process(fresh_memory(), mutation)
        try:
            regions_text = jit_regions(process, process.cache, "")
        except CommandError as error:
            regions_text = f"error: {error}"
        return Walked(frames, reason, natural, labels, python, python_reason, mixed_json,
                      regions_text, native_trace, python_trace, records,
                      time.process_time() - start, plain,
                      sum(m.reads for m in memories), max(m.largest for m in memories))

    # -- checking ------------------------------------------------------------------------

    def check(self, seed: int, mutation: Mutation) -> List[Failure]:
        """Run one case; every broken rule as a Failure."""
        failures: List[Failure] = []

        def fail(problem: str) -> None:
            failures.append(Failure(self.name, seed, str(mutation), problem))

        try:
            with watchdog(HANG_LIMIT):
                result = self.run(mutation)
        except Hang as error:
            fail(f"hang: {error}")
            return failures
        except Exception as error:  # exactly what the fuzzer looks for
            import traceback
            fail("exception escaped: " + "".join(
                traceback.format_exception(type(error), error, error.__traceback__)))
            return failures
        reference = self.reference
        if result.seconds > TIME_BUDGET:
            fail(f"slow: {result.seconds:.2f} s of CPU time (budget {TIME_BUDGET} s)")
        self.last_reads = (result.reads, result.largest_read)
        if result.largest_read > MAX_READ:
            fail(f"absurd read: {result.largest_read:#x} bytes at once")
        if result.reads > MAX_READS:
            fail(f"too many reads: {result.reads}")
        stack = self.image.stack_segment()
        budget = (stack.end - stack.start) // 8 + 1 if stack else MAX_NATIVE_FRAMES
        if len(result.frames) >= min(budget, MAX_NATIVE_FRAMES - 1):
            fail(f"frame budget: {len(result.frames)} frames")
        if result.frames and not result.reason and not result.natural_end:
            fail("the walk ended without a reason: last frame "
                 f"{_show(result.frames[-1])}")
        ours = [(frame.level, frame.pc) for frame in result.frames]
        if ours[:len(result.plain)] != result.plain:
            fail(f"frames lost: the debugger alone finds {_levels(result.plain)}, with "
                 f"jit-unwind {_levels(ours[:len(result.plain)])}")
        self.last_changed = [_show(f) for f in result.frames] != [
            _show(f) for f in reference.frames] or result.python != reference.python
        keep = self.native_prefix(mutation)
        if len(result.frames) < keep:
            fail(f"frames lost: {len(result.frames)} frames, the intact walk's first {keep} "
                 f"do not depend on what the mutation changed")
        for mine, theirs in zip(result.frames[:keep], reference.frames[:keep]):
            if _show(mine) != _show(theirs):
                fail(f"frame changed before the first corrupted read: {_show(mine)} instead "
                     f"of {_show(theirs)}")
                break
        if keep == len(reference.frames) and keep and (
                result.reason != reference.reason or len(result.frames) != keep):
            fail(f"a walk that read nothing corrupted ended otherwise: "
                 f"{len(result.frames)} frames ({result.reason!r}) instead of {keep} "
                 f"({reference.reason!r})")
        if result.labels[:keep] != reference.labels[:keep]:
            fail("bt's labels changed before the first corrupted read")
        if self.recorded.python:
            self._check_python(mutation, result, fail)
        return failures

    def _check_python(self, mutation: Mutation, result: Walked, fail) -> None:
        reference = self.reference
        keep = self.python_prefix(mutation)
        mine = list(result.python or ())
        theirs = list(reference.python or ())
        if len(mine) < keep:
            fail(f"Python frames lost: {len(mine)}, the intact core's first {keep} do not "
                 f"depend on what the mutation changed")
        elif mine[:keep] != theirs[:keep]:
            fail("a Python frame changed before the first corrupted read")
        if result.python is not None and len(mine) > 100_000:
            fail(f"Python frame budget: {len(mine)} frames")
        if result.mixed_json is not None:
            try:
                document = json.loads(result.mixed_json)
                VALIDATOR.validate(document)
            except Exception as error:
                fail(f"py-mixed-bt --json is not valid: {error}")

    def native_prefix(self, mutation: Mutation) -> int:
        """How many of the intact walk's frames the mutation cannot have changed."""
        reference = self.reference
        if mutation.registers or mutation.perf_map is not None:
            return 0
        level = _first_changed(self.image, reference.native_trace, mutation,
                               lambda phase: max(phase, 0))
        return len(reference.frames) if level is None else min(level, len(reference.frames))

    def python_prefix(self, mutation: Mutation) -> int:
        reference = self.reference
        frames = list(reference.python or ())
        if mutation.registers and not frames:
            return 0
        changed = _changed_phases(self.image, reference.python_trace, mutation)
        if ("pre", 0) in changed:
            return 0
        keep = 0
        for index, record in enumerate(reference.python_records):
            if any(("record", r) in changed for r in range(record + 2)) or any(
                    ("frame", f) in changed for f in range(index + 1)):
                break
            keep += 1
        return keep


class _Recording:
    """A thread whose frames are remembered as the walk makes them, each with ``bt``'s
    label (``stack.jit_label``) taken before its caller is made, as GDB's frame filter
    decorates frames while they stream by."""

    def __init__(self, thread, cache):
        self._thread = thread
        self._cache = cache
        self.made: List = []
        self.labels: List = []
        self.number, self.native_id, self.name = thread.number, thread.native_id, thread.name

    def newest_frame(self):
        return self._record(self._thread.newest_frame())

    def _label(self, frame):
        if "rip" not in frame.registers:
            return None
        label = jit_label(frame, frame.pc(), self._cache)
        return None if label is None else (label.name, label.guess, label.stop_reason,
                                           label.method)

    def label_last(self):
        if len(self.labels) < len(self.made):
            self.labels.append(self._label(self.made[-1]))

    def _record(self, frame):
        self.made.append(frame)
        original = frame.older

        def older():
            self.labels.append(self._label(frame))
            caller = original()
            return self._record(caller) if caller is not None else None
        frame.older = older
        return frame


def _python_thread(process: CoreProcess, memory: CoreMemory):
    """The first thread's Python frames, with reads tagged: ("pre", 0) before the
    records, ("record", n) reading record n, ("frame", i) making Python frame i."""
    memory.phase = ("pre", 0)
    cache = process.cache
    runtime, reason = cache.python_runtime()
    if runtime is None:
        return None, reason, []
    records: List[int] = []  # record index of each non-shim record, in order
    count = {"records": 0, "frames": 0}
    read_raw_frame, python_frame = runtime.read_raw_frame, runtime._python_frame

    def tagged_read(address):
        memory.phase = ("record", count["records"])
        count["records"] += 1
        return read_raw_frame(address)

    def tagged_frame(record, is_entry):
        memory.phase = ("frame", count["frames"])
        count["frames"] += 1
        return python_frame(record, is_entry)

    runtime.read_raw_frame, runtime._python_frame = tagged_read, tagged_frame
    raw_frames = runtime.raw_frames

    def remembered_raw_frames(first):
        found, why = raw_frames(first)
        records.extend(i for i, record in enumerate(found) if not record.is_shim)
        return found, why
    runtime.raw_frames = remembered_raw_frames
    thread = cache.python_thread(process.threads()[0].native_id)
    if thread is None:
        return None, "no Python thread", records
    return thread.frames, thread.stop_reason, records


def _changed(image: CoreImage, mutation: Mutation, read) -> bool:
    """Whether ``read`` gives another result on the mutated core than on the intact one."""
    intact = CoreMemory(image).try_read(read.address, read.size)
    mutated = CoreMemory(image, mutation.patches, mutation.cut).try_read(read.address, read.size)
    return intact != mutated


def _first_changed(image, trace, mutation, level_of) -> Optional[int]:
    for read in trace:
        if _touches(mutation, read) and _changed(image, mutation, read):
            return level_of(read.phase)
    return None


def _changed_phases(image, trace, mutation) -> set:
    return {read.phase for read in trace
            if _touches(mutation, read) and _changed(image, mutation, read)}


def _touches(mutation: Mutation, read) -> bool:
    """A cheap filter before comparing bytes: could the mutation affect this read?"""
    if mutation.cut is not None:
        return True
    end = read.address + read.size
    return any(start < end and read.address < start + len(data)
               for start, data in mutation.patches.items())


def _levels(frames) -> str:
    return ", ".join(f"#{level} {pc:#x}" if pc is not None else f"#{level} ?"
                     for level, pc in frames) or "no frame"


def _show(frame) -> Tuple:
    return (frame.level, frame.kind.value, frame.pc, frame.name, frame.guess,
            frame.stop_reason, frame.method)
