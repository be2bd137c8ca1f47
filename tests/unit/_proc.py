"""Test helpers: stopped CPython processes, their memory, their ELF symbols.

The core gets memory and symbol addresses from a debugger; here a stopped child process
stands in: :class:`ProcMemory` reads /proc/PID/mem, :func:`elf_lookup` resolves
symbols (or the ``.PyRuntime`` section) of libpython with pyelftools plus the load
address from /proc/PID/maps.
"""

import json
import os
import re
import select
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from elftools.elf.elffile import ELFFile

from jit_unwind.target import Memory, MemoryReadError
from tests.python_expect import marks
from tests.support import REPO, pyenv_python

FIXTURES = REPO / "tests" / "fixtures" / "python"
RECURSE_SCRIPT = FIXTURES / "stop_in_recursion.py"
STOP_TIMEOUT = 20.0


class ProcMemory(Memory):
    """Memory of a live (stopped) local process through /proc/PID/mem."""

    def __init__(self, pid: int):
        self.pid = pid
        self._fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)

    def read(self, address: int, size: int) -> bytes:
        if address < 0 or size < 0 or address + size > 1 << 64:
            raise MemoryReadError(address, size)
        try:
            data = os.pread(self._fd, size, address)
        except (OSError, OverflowError):
            raise MemoryReadError(address, size) from None
        if len(data) != size:
            raise MemoryReadError(address, size)
        return data

    def close(self) -> None:
        os.close(self._fd)


marker_lines = marks  # ``{name: line}`` of the ``# MARK: name`` comments


def mapped_file(pid: int, pattern: str) -> Path:
    """The first file mapped into ``pid`` whose path matches ``pattern``."""
    with open(f"/proc/{pid}/maps") as handle:
        for line in handle:
            fields = line.split(None, 5)
            if len(fields) == 6 and re.search(pattern, fields[5].strip()):
                return Path(fields[5].strip())
    raise AssertionError(f"no mapping matching {pattern!r} in process {pid}")


def load_bias(pid: int, path: Path) -> int:
    """Where ``path`` is loaded in ``pid``: mapping start minus the ELF's first vaddr."""
    starts = []
    with open(f"/proc/{pid}/maps") as handle:
        for line in handle:
            fields = line.split(None, 5)
            if (len(fields) == 6 and fields[5].strip() == str(path)
                    and int(fields[2], 16) == 0):
                starts.append(int(fields[0].split("-")[0], 16))
    assert starts, f"{path} is not mapped at file offset 0 in process {pid}"
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        first = min(segment["p_vaddr"] for segment in elf.iter_segments()
                    if segment["p_type"] == "PT_LOAD")
    return min(starts) - (first & ~0xFFF)


def elf_lookup(pid: int, library: Path,
               use_symbols: bool = True) -> Callable[[str], Optional[int]]:
    """A symbol lookup over ``library`` as loaded in ``pid``.

    With ``use_symbols`` it answers from .symtab/.dynsym; without, it knows only
    ``_PyRuntime``, found as the start of the ``.PyRuntime`` section (stripped builds)."""
    bias = load_bias(pid, library)
    table: Dict[str, int] = {}
    with open(library, "rb") as handle:
        elf = ELFFile(handle)
        if use_symbols:
            # Both are exported, so .dynsym has them (and is ten times smaller than .symtab).
            for name in (".dynsym", ".symtab"):
                section = elf.get_section_by_name(name)
                if section is None or len(table) == 2:
                    continue
                for symbol in section.iter_symbols():
                    if symbol["st_value"] and symbol.name in ("_PyRuntime", "Py_Version"):
                        table[symbol.name] = symbol["st_value"] + bias
        else:
            section = elf.get_section_by_name(".PyRuntime")
            assert section is not None, f"{library} has no .PyRuntime section"
            table["_PyRuntime"] = section["sh_addr"] + bias
    return table.get


def libpython_of(pid: int) -> Path:
    """The libpython ``pid`` runs, or its executable for a static interpreter (the
    test interpreters of tests/jit_python.py)."""
    try:
        return mapped_file(pid, r"/libpython3\.\d+[^/]*\.so")
    except AssertionError:
        return Path(os.readlink(f"/proc/{pid}/exe"))


@dataclass
class StoppedPython:
    pid: int
    process: subprocess.Popen
    facts: dict
    memory: ProcMemory
    library: Path
    script: Path
    marks: Dict[str, int] = field(default_factory=dict)

    def lookup(self, use_symbols: bool = True) -> Callable[[str], Optional[int]]:
        return elf_lookup(self.pid, self.library, use_symbols)

    def task_ids(self) -> List[int]:
        return sorted(int(name) for name in os.listdir(f"/proc/{self.pid}/task"))


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0]


@contextmanager
def stopped_process(argv: Sequence[str], env: Optional[dict] = None, timeout: float = STOP_TIMEOUT
                    ) -> Iterator[Tuple[subprocess.Popen, dict, ProcMemory]]:
    """Run ``argv`` until it prints one JSON line of facts and stops itself; yield the
    process, the facts and its memory; kill it (and remove its perf map) afterwards."""
    process = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    memory = None
    try:
        deadline = time.monotonic() + timeout
        while _state(process.pid) != "T":
            if process.poll() is not None:
                raise AssertionError(f"{argv[0]} exited with {process.returncode}: "
                                     f"{process.stderr.read().decode()}")
            assert time.monotonic() < deadline, f"{argv} did not stop itself"
            time.sleep(0.01)
        ready, _, _ = select.select([process.stdout], [], [], 5)
        assert ready, "the stopped script printed nothing"
        facts = json.loads(process.stdout.readline())
        memory = ProcMemory(process.pid)
        yield process, facts, memory
    finally:
        if memory is not None:
            memory.close()
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
        try:
            os.unlink(f"/tmp/perf-{process.pid}.map")
        except OSError:
            pass


@contextmanager
def stopped_python(python: Path, args: Sequence[str], python_options: Sequence[str] = (),
                   script: Path = RECURSE_SCRIPT, env: Optional[dict] = None
                   ) -> Iterator[StoppedPython]:
    """Run ``python [options] script args`` until it stops itself; kill it afterwards."""
    with stopped_process([python, *python_options, script, *args], env) as (
            process, facts, memory):
        yield StoppedPython(process.pid, process, facts, memory, libpython_of(process.pid),
                            script, marker_lines(script))

__all__ = ["ProcMemory", "StoppedPython", "stopped_process", "stopped_python", "elf_lookup",
           "marker_lines", "libpython_of", "load_bias", "pyenv_python", "RECURSE_SCRIPT"]
