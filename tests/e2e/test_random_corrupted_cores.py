"""Seeded random corruptions of a toy JIT core through real GDB 18 and LLDB 23.

The mutations are the core-level fuzzer's (tests/fuzz/mutations.py: frame-pointer
cycles, pointers into unmapped memory, misaligned or decreasing sp, random return slots,
JIT code bytes, a truncated file, random words), written into a copy of a gcore core of
``toyjit mixed 3 sigtrap --perf-map``.  Each core is checked as test_corrupted_cores.py
and test_corrupted_cores_lldb.py check theirs: no traceback, the debugger's own frames
kept up to its first nameless one, a walk that ends early says why.

FUZZ_E2E_CASES cases (20 in the suite; ``make fuzz`` runs more), seeds from FUZZ_SEED;
a failure names its seed and mutation.
"""

import os
import shutil
import struct
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from tests.e2e.test_corrupted_cores import Subject as CoreSubject
from tests.e2e.test_corrupted_cores import check_core
from tests.e2e.test_corrupted_cores_lldb import check_lldb_core
from tests.fuzz.coremodel import PR_REG, USER_REGS
from tests.fuzz.cores import record_core
from tests.fuzz.harness import Mutation, Subject
from tests.fuzz.mutations import mutation_for
from tests.support import GDB_BINARIES

CASES = int(os.environ.get("FUZZ_E2E_CASES", 20))
SEED = int(os.environ.get("FUZZ_SEED", 20261123))
RECIPE = "toy-mixed"


@pytest.fixture(scope="module")
def toy_core(tmp_path_factory):
    """The recorded core, its fuzz subject, and its perf map back in /tmp meanwhile."""
    recorded = record_core(RECIPE, tmp_path_factory.mktemp("random-cores"))
    installed = None
    if not Path(f"/tmp/perf-{recorded.pid}.map").exists():
        installed = recorded.install_perf_map()
    try:
        yield recorded, Subject(recorded)
    finally:
        recorded.remove_perf_map(installed)


def file_mutation(subject: Subject, seed: int) -> Mutation:
    """The fuzzer's mutation for ``seed``, drawn again while it is a perf map's (the map
    in /tmp is the process's own)."""
    for attempt in range(100):
        mutation = mutation_for(subject, seed * 100 + attempt)
        if mutation.perf_map is None:
            return mutation
    raise AssertionError("no mutation of the core file")


def write_mutated_core(subject: Subject, mutation: Mutation, dst: Path) -> Path:
    """A copy of the core with the mutation's bytes, registers and length."""
    shutil.copyfile(subject.recorded.core, dst)
    image = subject.image
    with open(dst, "r+b") as handle:
        for address, data in mutation.patches.items():
            for index, byte in enumerate(data):  # bytes the core holds; files stay
                segment = image.segment_at(address + index)
                if segment is not None:
                    handle.seek(segment.offset + address + index - segment.start)
                    handle.write(bytes([byte]))
        if mutation.registers:
            offset = _first_prstatus(dst)
            for name, value in mutation.registers.items():
                handle.seek(offset + PR_REG + 8 * USER_REGS.index(name))
                handle.write(struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF))
        if mutation.cut is not None:
            handle.truncate(mutation.cut)
    return dst


def _first_prstatus(core: Path) -> int:
    """File offset of the first NT_PRSTATUS note's descriptor."""
    with open(core, "rb") as handle:
        for segment in ELFFile(handle).iter_segments():
            if segment["p_type"] != "PT_NOTE":
                continue
            for note in segment.iter_notes():
                if note["n_type"] == "NT_PRSTATUS":
                    return note["n_offset"] + 12 + ((note["n_namesz"] + 3) & ~3)
    raise AssertionError(f"{core} has no NT_PRSTATUS")


@pytest.mark.parametrize("case", range(CASES))
def test_random_corruption_gdb18_and_lldb23(toy_core, tmp_path, case):
    recorded, subject = toy_core
    seed = SEED + case
    mutation = file_mutation(subject, seed)
    core = write_mutated_core(subject, mutation, tmp_path / f"seed-{seed}.core")
    where = f"{RECIPE} seed={seed} [{mutation}] (FUZZ_SEED={SEED}, case {case})"
    try:
        check_core(GDB_BINARIES["gdb18"],
                   CoreSubject(RECIPE, recorded.program, core, [], False), core)
        check_lldb_core(recorded.program, core, python=False)
    except AssertionError as error:
        raise AssertionError(f"{where}\n{error}") from None
