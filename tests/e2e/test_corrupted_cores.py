"""Corrupted core files under real GDB 13 and 18: a backtrace never gets worse with the
plugin, nothing prints a Python traceback, and a walk that ends early says why.

Each core is written by ``gcore`` from a real process (the toy JIT in its three modes,
CPython 3.12 with ``-X perf``, CPython 3.13's and 3.14's JIT) and copied with one kind of damage:

- stack words scribbled: the return slot of the first JIT frame, the frame of its
  caller, or random words between the stop and the outermost frame;
- the JIT code's bytes replaced (the anonymous executable load segments);
- truncated: notes moved first (as the kernel writes cores) and the file cut inside the
  stack, or the registers' note (NT_PRSTATUS) made unrecognisable.

For each, ``bt`` without the plugin is the baseline: the plugin's ``bt`` must list the
same frames (same pc, same name) up to and including GDB's first frame without a name
(where GDB meets JIT code and its own walk turns to guesses), and a walk that does not
reach the outermost frame must end with ``[unwind stopped: <reason>]``.  ``info
jit-regions`` and, on CPython, ``py-mixed-bt`` (text and JSON) must stay usable.

A last test hides pyelftools from GDB's Python: the messages name the package and the
command that installs it.
"""

import json
import random
import re
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import jsonschema
import pytest
from elftools.elf.elffile import ELFFile

from tests.jit_python import jit_python
from tests.python_expect import RECURSE, SCRIPTS
from tests.support import (GDB_BINARIES, PRINT_PID, REPO, BtFrame, fixture_binary,
                           parse_backtrace, pyenv_python, remove_perf_map, run_gdb)

PT_LOAD, PT_NOTE, PF_X = 1, 4, 1
JIT_SCENARIOS = SCRIPTS / "jit_scenarios.py"
AT_SYSINFO_EHDR = 33
KERNEL_SPACE = 0xFFFF800000000000  # [vsyscall]
# elf_prstatus on x86-64: pr_reg starts at byte 112; rsp is its 20th register.
PRSTATUS_RSP = 112 + 19 * 8
# Where a thread's stack legitimately ends in plain GDB's bt.
OUTERMOST = {"main", "_start", "clone", "clone3", "__libc_start_main_impl",
             "__libc_start_call_main", "start_thread"}
SCHEMA = json.loads((REPO / "docs" / "py-mixed-bt.schema.json").read_text())

# One python command for the GDB run that makes a core: every frame's level, sp and name
# (None for JIT code), as the plugin unwinds the intact stack.
PRINT_FRAMES = ("python exec(\"f = gdb.newest_frame()\\nwhile f is not None:\\n"
                "    print('frame-sp', f.level(), int(f.read_register('rsp')), f.name())\\n"
                "    f = f.older()\")")
_FRAME_SP = re.compile(r"^frame-sp (\d+) (\d+) (\S+)$", re.M)


# --- the programs, and their cores ---------------------------------------------------

@dataclass
class Subject:
    """A core file of a stopped program, and what its stack looked like."""

    name: str
    program: Path
    core: Path
    frames: List[Tuple[int, int, Optional[str]]]  # (level, sp, name or None for JIT)
    python: bool

    def first_jit(self) -> int:
        return next(i for i, (_, _, name) in enumerate(self.frames) if name is None)


def _subjects():
    toyjit = lambda: fixture_binary("toyjit")  # built when first needed
    return {
        "toy-fp": (toyjit, ["fp", "2", "sigtrap"], [], False),
        "toy-frameless": (toyjit, ["frameless", "2", "sigtrap"], [], False),
        "toy-mixed": (toyjit, ["mixed", "3", "sigtrap"], [], False),
        "py3.12-perf": (lambda: pyenv_python("3.12.1"), ["-X", "perf", RECURSE], [], True),
        "py3.13-jit": (lambda: jit_python("3.13"), [SCRIPTS / "jit_scenarios.py", "kill"],
                       ["set environment PYTHON_JIT=1"], True),
        "py3.14-jit": (lambda: jit_python("3.14"), [SCRIPTS / "jit_scenarios.py", "kill"],
                       ["set environment PYTHON_JIT=1"], True),
    }


SUBJECTS = _subjects()


@pytest.fixture(scope="module")
def subjects(tmp_path_factory):
    """Cores made on demand, once per module; the perf maps of their processes stay until
    the module's tests are done (they name the trampolines of the cores)."""
    made: Dict[str, Subject] = {}
    outputs: List[str] = []

    def get(name: str) -> Subject:
        if name not in made:
            program, args, before, python = SUBJECTS[name]
            program = program()
            core = tmp_path_factory.mktemp(name) / "intact.core"
            # The symbol file off: GDB's own name of a JIT frame stays None.
            output = run_gdb(GDB_BINARIES["gdb13"], [*before, "set jit-unwind symbol-file off",
                                                     "run", PRINT_PID, PRINT_FRAMES,
                                                     f"gcore {core}"], [program, *args])
            outputs.append(output)
            assert core.exists(), output
            frames = [(int(level), int(sp), None if name == "None" else name)
                      for level, sp, name in _FRAME_SP.findall(output)]
            made[name] = Subject(name, program, core, frames, python)
        return made[name]

    yield get
    for output in outputs:
        remove_perf_map(output)


# --- reading and damaging cores --------------------------------------------------------

@dataclass
class Load:
    vaddr: int
    offset: int
    filesz: int
    flags: int

    def holds(self, address: int) -> bool:
        return self.vaddr <= address < self.vaddr + self.filesz


@dataclass
class CoreLayout:
    loads: List[Load]
    rsp: int                        # the first thread's, from NT_PRSTATUS
    files: List[Tuple[int, int]]    # NT_FILE: file-backed ranges
    vdso: Optional[int]

    def stack(self) -> Load:
        return next(load for load in self.loads if load.holds(self.rsp))

    def jit_code(self) -> List[Load]:
        """Anonymous executable segments: neither file-backed, the vDSO nor [vsyscall]."""
        return [load for load in self.loads
                if load.flags & PF_X and load.filesz and load.vaddr != self.vdso
                and load.vaddr < KERNEL_SPACE
                and not any(start <= load.vaddr < end for start, end in self.files)]


def _auxv(desc) -> Dict[int, int]:
    """NT_AUXV as {type: value}; pyelftools hands it over raw or parsed by version."""
    if isinstance(desc, (bytes, bytearray)):
        pairs = [struct.unpack_from("<QQ", desc, i) for i in range(0, len(desc) - 15, 16)]
    else:
        pairs = [(entry["a_type"], entry["a_val"]) for entry in desc]
    return {AT_SYSINFO_EHDR if key == "AT_SYSINFO_EHDR" else key: value
            for key, value in pairs}


def read_layout(core: Path) -> CoreLayout:
    with open(core, "rb") as handle:
        elf = ELFFile(handle)
        loads, files, rsp, vdso = [], [], None, None
        for segment in elf.iter_segments():
            if segment["p_type"] == "PT_LOAD":
                loads.append(Load(segment["p_vaddr"], segment["p_offset"],
                                  segment["p_filesz"], segment["p_flags"]))
            elif segment["p_type"] == "PT_NOTE":
                for note in segment.iter_notes():
                    if note["n_type"] == "NT_PRSTATUS" and rsp is None:
                        rsp = struct.unpack_from("<Q", note["n_desc"], PRSTATUS_RSP)[0]
                    elif note["n_type"] == "NT_FILE":
                        files = [(entry["vm_start"], entry["vm_end"])
                                 for entry in note["n_desc"]["Elf_Nt_File_Entry"]]
                    elif note["n_type"] == "NT_AUXV":
                        vdso = _auxv(note["n_desc"]).get(AT_SYSINFO_EHDR)
    assert rsp is not None and loads, core
    return CoreLayout(loads, rsp, files, vdso)


def _write_words(core: Path, layout: CoreLayout, words: Dict[int, int]) -> None:
    """Overwrite 8-byte words of the core's memory: {address: value}."""
    with open(core, "r+b") as handle:
        for address, value in sorted(words.items()):
            load = next((load for load in layout.loads if load.holds(address)), None)
            if load is not None and load.holds(address + 7):
                handle.seek(load.offset + address - load.vaddr)
                handle.write(struct.pack("<Q", value))


def scribble(subject: Subject, dst: Path, where: str, seed: int = 0) -> Path:
    """A copy whose stack has words overwritten: ``jit-return`` the two words under the
    first JIT frame's caller's sp (its return address, and saved rbp or padding),
    ``jit-caller`` the first six words of that caller's frame, ``random`` 24 random words
    between the stop and the outermost frame, with random values."""
    shutil.copyfile(subject.core, dst)
    layout = read_layout(dst)
    rng = random.Random(seed)
    jit = subject.first_jit()
    caller_sp = subject.frames[jit + 1][1]
    if where == "jit-return":
        words = {caller_sp - 16: 0x4141414141414141, caller_sp - 8: 0x4141414141414141}
    elif where == "jit-caller":
        words = {caller_sp + 8 * i: 0x4242424242424242 for i in range(6)}
    else:
        top = subject.frames[-1][1]
        slots = rng.sample(range((top - layout.rsp) // 8), 24)
        words = {layout.rsp + 8 * slot: rng.getrandbits(64) for slot in slots}
    _write_words(dst, layout, words)
    return dst


def scramble_jit_code(subject: Subject, dst: Path, seed: int = 0) -> Path:
    """A copy whose JIT code (every anonymous executable segment) is random bytes."""
    shutil.copyfile(subject.core, dst)
    layout = read_layout(dst)
    rng = random.Random(seed)
    assert layout.jit_code(), "the core has no JIT code segment"
    with open(dst, "r+b") as handle:
        for load in layout.jit_code():
            handle.seek(load.offset)
            handle.write(bytes(rng.getrandbits(8) for _ in range(load.filesz)))
    return dst


def notes_first(src: Path, dst: Path) -> CoreLayout:
    """Rewrite a gcore core (notes last) as the kernel writes one (notes right after the
    program headers, then the segments), so that cutting it short loses memory, not the
    notes without which GDB refuses the file."""
    data = src.read_bytes()
    elf = ELFFile(open(src, "rb"))  # closed with the object
    phoff, phentsize, phnum = elf["e_phoff"], elf["e_phentsize"], elf["e_phnum"]
    headers = [list(struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize))
               for i in range(phnum)]
    out = bytearray(data[:phoff + phentsize * phnum])
    for header in sorted(headers, key=lambda h: (h[0] != PT_NOTE, h[3])):
        p_type, _flags, offset, _vaddr, _paddr, filesz = header[:6]
        while len(out) % (0x1000 if p_type == PT_LOAD else 4):
            out.append(0)
        header[2] = len(out)
        out += data[offset:offset + filesz]
    for i, header in enumerate(headers):
        struct.pack_into("<IIQQQQQQ", out, phoff + i * phentsize, *header)
    dst.write_bytes(bytes(out))
    return read_layout(dst)


def truncate(subject: Subject, dst: Path, how: str) -> Path:
    """``in-stack``: a kernel-layout copy cut 16 words above the stop's sp, so the stack
    beyond and every later segment are missing; ``no-registers``: a copy whose
    NT_PRSTATUS notes have another type, so GDB finds no registers."""
    if how == "in-stack":
        layout = notes_first(subject.core, dst)
        stack = layout.stack()
        with open(dst, "r+b") as handle:
            handle.truncate(stack.offset + layout.rsp - stack.vaddr + 16 * 8)
        return dst
    shutil.copyfile(subject.core, dst)
    with open(dst, "rb") as handle:
        offsets = [note["n_offset"] for segment in ELFFile(handle).iter_segments()
                   if segment["p_type"] == "PT_NOTE" for note in segment.iter_notes()
                   if note["n_type"] == "NT_PRSTATUS"]
    with open(dst, "r+b") as handle:
        for offset in offsets:
            handle.seek(offset + 8)  # n_namesz, n_descsz, n_type
            handle.write(struct.pack("<I", 0x4B4E554A))
    return dst


# --- what a user sees ---------------------------------------------------------------

_ADDRESS = re.compile(r"^#\d+\s+(0x[0-9a-f]+) in ")
# A reason may hold " (" ("previous frame inner to this frame (corrupt stack?)"), where
# parse_backtrace ends the function's name: the mark may have lost its "]".
_SUFFIX = re.compile(r" \[(?:guess|via|unwind stopped)[^\]]*(?:\]|$)")
_STOPPED = "[unwind stopped: "


def _nameless(name: str) -> bool:
    return name.endswith("??")


def _address(frame: BtFrame) -> Optional[str]:
    match = _ADDRESS.match(frame.line)
    return match.group(1) if match else None


def _section(output: str, marker: str) -> str:
    """The text after ``echo <marker>`` up to the next marker."""
    return output.split(f"@@{marker}\n", 1)[1].split("\n@@", 1)[0]


def assert_no_worse(plain: List[BtFrame], ours: List[BtFrame], output: str) -> None:
    """Plain GDB's frames up to and including its first nameless one (JIT code, or a
    scribbled return address) are ours too: same level, pc and name (a nameless frame may
    have gained a name)."""
    first = next((i for i, f in enumerate(plain) if _nameless(f.function)), len(plain) - 1)
    assert len(ours) >= first + 1, output
    for theirs, mine in zip(plain[:first + 1], ours):
        assert mine.level == theirs.level, output
        assert _address(mine) == _address(theirs), output
        if not _nameless(theirs.function):
            assert _SUFFIX.sub("", mine.function) == theirs.function, output


def says_stopped(frames: List[BtFrame], output: str, reason: str = "") -> bool:
    """The walk's last frame says why it ended (``reason`` its start): our mark on it
    when the frame filter printed the stack, else GDB's own "Backtrace stopped: ..."
    line (a stack without JIT code GDB prints itself, and a filter would drop the line)."""
    return (f"{_STOPPED}{reason}" in frames[-1].function
            or re.search(rf"^Backtrace stopped: {re.escape(reason)}", output, re.M)
            is not None)


def assert_says_why(frames: List[BtFrame], output: str) -> None:
    """A walk ends at an outermost function or GDB's zero pc, or says why it ended."""
    last = frames[-1]
    natural = (_SUFFIX.sub("", last.function) in OUTERMOST
               or _address(last) == "0x0000000000000000")
    assert natural or says_stopped(frames, output), output


def _mixed_frames(text: str) -> List[Tuple[int, str]]:
    return [(int(m.group(1)), m.group(2))
            for m in re.finditer(r"^#(\d+)\s+(.*)$", text, re.M)]


def check_py_mixed_bt(plain: List[BtFrame], text: str, document: str) -> None:
    """py-mixed-bt lists plain GDB's frames as bt does, and says why a walk ended.  A
    frame whose pc GDB cannot read ("<unavailable>") is where py-mixed-bt stops."""
    frames = _mixed_frames(text)
    first = next((i for i, f in enumerate(plain) if _nameless(f.function)), len(plain) - 1)
    expected = [f for f in plain[:first + 1] if not f.function.startswith("<unavailable>")]
    if len(expected) <= first:
        assert "(backtrace stopped: PC not available)" in text, text
    assert len(frames) >= len(expected), text
    for theirs, (level, line) in zip(expected, frames):
        assert level == theirs.level, text
        if not _nameless(theirs.function):
            assert line == theirs.function or line.startswith(theirs.function + " at "), text
    last = frames[-1][1].split(" at ")[0] if frames else None
    if last not in OUTERMOST and last != "0x0":
        assert "(backtrace stopped: " in text, text
    data = json.loads(document)
    jsonschema.validate(data, SCHEMA)
    thread = data["threads"][0]
    assert len(thread["frames"]) == len(frames), document
    assert bool(thread["stop_reason"]) == ("(backtrace stopped: " in text), document


def check_same_marks(ours: List[BtFrame], document: str) -> None:
    """A frame py-mixed-bt marks as a guess, or as where our unwinder stopped, is marked
    so in bt too, and the other way round for guesses."""
    bt = {frame.level: frame.function for frame in ours}
    for frame in json.loads(document)["threads"][0]["frames"]:
        if frame["level"] not in bt:
            continue
        function = bt[frame["level"]]
        assert frame["guess"] == ("[guess: found by stack scan]" in function), (bt, frame)
        if frame["stop_reason"]:
            assert f"[unwind stopped: {frame['stop_reason']}]" in function, (bt, frame)


def check_core(gdb: Path, subject: Subject, core: Path) -> str:
    """Run plain bt and the plugin's commands on ``core``; check everything above.
    Returns the plugin's bt output."""
    plain_output = run_gdb(gdb, ["bt"], [subject.program], core=core, plugin=False)
    commands = ["echo @@bt\\n", "bt", "echo @@regions\\n", "info jit-regions --all"]
    if subject.python:
        commands += ["echo @@mixed\\n", "py-mixed-bt", "echo @@json\\n",
                     "py-mixed-bt --json", "echo @@end\\n"]
    output = run_gdb(gdb, commands, [subject.program], core=core)
    plain = parse_backtrace(plain_output)
    bt = _section(output, "bt")
    ours = parse_backtrace(bt)
    if not plain:  # GDB has no frame at all: neither do we
        assert not ours, output
        return bt
    assert_no_worse(plain, ours, f"{plain_output}\n---- with the plugin:\n{output}")
    assert_says_why(ours, output)
    regions = _section(output, "regions")
    assert (re.search(r"^start\s+end\s+size\s+source\s+name$", regions, re.M)
            or "No JIT regions" in regions), output
    if subject.python:
        check_py_mixed_bt(plain, _section(output, "mixed"), _section(output, "json"))
        check_same_marks(ours, _section(output, "json"))
    return bt


# --- the tests ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["jit-return", "jit-caller", "random"])
@pytest.mark.parametrize("name", list(SUBJECTS))
def test_scribbled_stack(gdb, subjects, tmp_path, name, where):
    subject = subjects(name)
    check_core(gdb, subject, scribble(subject, tmp_path / f"{where}.core", where))


@pytest.mark.parametrize("name", ["toy-mixed", "py3.12-perf", "py3.13-jit"])
def test_scrambled_jit_code(gdb, subjects, tmp_path, name):
    subject = subjects(name)
    check_core(gdb, subject, scramble_jit_code(subject, tmp_path / "code.core"))


@pytest.mark.parametrize("how", ["in-stack", "no-registers"])
@pytest.mark.parametrize("name", ["toy-mixed", "py3.12-perf"])
def test_truncated_core(gdb, subjects, tmp_path, name, how):
    subject = subjects(name)
    bt = check_core(gdb, subject, truncate(subject, tmp_path / f"{how}.core", how))
    frames = parse_backtrace(bt)
    if how == "no-registers":  # GDB's own words, on the one frame it has
        assert len(frames) == 1, bt
        assert frames[0].function.startswith("<unavailable> in ??"), bt
        assert says_stopped(frames, bt, "not enough registers or memory available to "
                                        "unwind further"), bt
    else:  # the stack is cut 16 words above sp: GDB cannot read past it
        assert says_stopped(frames, bt, "Cannot access memory at address 0x"), bt


def _overwritten(subject: Subject, dst: Path, first: int, count: int) -> Path:
    """A copy with ``count`` stack words from ``first`` words above sp set to 0x41..."""
    shutil.copyfile(subject.core, dst)
    layout = read_layout(dst)
    _write_words(dst, layout, {layout.rsp + 8 * (first + i): 0x4141414141414141
                               for i in range(count)})
    return dst


def _frame_lines(text: str) -> List[str]:
    return [line for line in text.splitlines() if re.match(r"#\d+ ", line)]


def test_nameless_frames_print_as_plain_gdb_prints_them(gdb, subjects, tmp_path):
    """GDB 13's decorators print a nameless frame as "in  ()", GDB 18's as "in ???
    ()": with the plugin it stays "in ?? ()", as without it."""
    subject = subjects("toy-fp")
    # The return address of frame 0 and the next words: GDB follows 0x4141... around.
    core = _overwritten(subject, tmp_path / "nameless.core", 4, 6)
    plain = run_gdb(gdb, ["bt"], [subject.program], core=core, plugin=False)
    ours = run_gdb(gdb, ["bt"], [subject.program], core=core)
    assert "0x4141414141414141 in ?? ()" in plain, plain
    assert _frame_lines(ours) == _frame_lines(plain), ours
    assert " in  ()" not in ours and "???" not in ours


def test_unreadable_arguments_do_not_end_the_backtrace(gdb, subjects, tmp_path):
    """GDB's printing of filtered frames does not catch a read error of an argument
    (plain bt prints "<error reading variable: ...>"): one such argument used to end the
    whole backtrace with a Python exception."""
    subject = subjects("toy-fp")
    # The words right above sp: the saved rbp of the signal-raising frames, so that
    # toy_stop's frame base, and its argument, are garbage.
    core = _overwritten(subject, tmp_path / "args.core", 0, 6)
    plain = run_gdb(gdb, ["bt"], [subject.program], core=core, plugin=False)
    # show-method: the frame filter prints this stack without JIT code too.
    ours = run_gdb(gdb, ["set jit-unwind show-method on", "set print frame-arguments all",
                         "bt"], [subject.program], core=core)
    assert "=<error reading variable: Cannot access memory" in plain, plain
    frames = parse_backtrace(ours)
    assert [f.level for f in frames] == [f.level for f in parse_backtrace(plain)], ours
    assert '="<error reading variable: Cannot access memory' in frames[-1].line, ours
    stopped = re.search(r"^Backtrace stopped: (.+)$", plain, re.M).group(1)
    assert frames[-1].function.endswith(f"[unwind stopped: {stopped}]"), ours


def test_missing_pyelftools_is_named_with_its_install_command(tmp_path):
    """Debian's GDB 13 embeds the system Python; with pyelftools hidden from it, the
    plugin still does what it can: a core's segments and notes, the .PyRuntime section,
    .eh_frame and the exported symbols (read through .gnu.hash) need no pyelftools, so
    a 3.12 core shows its perf trampolines and Python frames, and Debian's stripped
    python3.11 (whose Py_Version only its .dynsym has) its Python frames, with no
    warning; a jitdump's unwind rules are read with struct too.  Where pyelftools is
    needed (the code CPython 3.15 registers through GDB's JIT interface), it says once
    what is missing and how to install it, and the walk is still whole."""
    gdb = GDB_BINARIES["gdb13"]
    python = pyenv_python("3.12.1")
    hide = ['python import sys; sys.modules["elftools"] = None']
    live = run_gdb(gdb, ["run", PRINT_PID, "bt", "py-mixed-bt",
                         f"gcore {tmp_path / 'python.core'}"],
                   [python, "-X", "perf", RECURSE], early=hide)
    try:
        from_core = run_gdb(gdb, ["bt", "echo @@regions\\n", "info jit-regions --source core",
                                  "echo @@end\\n", "py-mixed-bt"], [python],
                            core=tmp_path / "python.core", early=hide)
    finally:
        remove_perf_map(live)
    for output in (live, from_core):
        assert "no _PyRuntime" not in output, output
        # Python frames in bt and py-mixed-bt, the trampolines named from the perf map.
        assert re.search(r"^\s+\[py\] recurse \(\) at ", output, re.M), output
        assert re.search(r"^\s+\[py\] recurse \(", output.split("Thread 1")[-1], re.M), output
        assert "in py::recurse:" in output and "Py_BytesMain" in output, output
        assert "is not installed" not in output, output
    assert re.search(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+core\b",
                     _section(from_core, "regions"), re.M), from_core

    system = run_gdb(gdb, ["run", "bt", "py-mixed-bt"], ["/usr/bin/python3.11", RECURSE],
                     early=hide)
    assert "is not installed" not in system, system
    assert re.search(r"^\s+\[py\] recurse \(", system.split("Thread 1")[-1], re.M), system

    jitdump = run_gdb(gdb, ["run", "bt"], [fixture_binary("jitdump_jit"), "2", "--dir",
                                           tmp_path], early=hide)
    assert "is not installed" not in jitdump, jitdump
    assert jitdump.count("in jit::realigned ()") == 3, jitdump
    assert re.search(r"^#\d+ .* in main ", jitdump, re.M), jitdump

    registered = run_gdb(gdb, ["set environment PYTHON_JIT=1", "run", "bt",
                               "info jit-regions"],
                         [jit_python("3.15-jit"), JIT_SCENARIOS, "kill"], early=hide)
    warning = ("warning: jit-unwind: pyelftools is not installed in GDB's Python 3.11: "
               "without it jit-unwind cannot read the code registered through GDB's JIT "
               "interface")
    install = ("Install it with `apt-get install python3-pyelftools` (Debian's GDB) "
               "or run `make venv`")
    assert registered.count(warning) == 1 and install in registered, registered
    assert re.search(r"^#\d+ .* in \[jit\] hot \(", registered, re.M), registered
    assert re.search(r"^#\d+ .* in _start ", registered, re.M), registered
