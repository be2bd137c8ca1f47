"""Cores without a file list (no NT_FILE note), as qemu-user writes them, under GDB 13,
GDB 18, LLDB 23 and ``jit-unwind core --debugger none``: the same frames and names as on the
core with its note, and no frame of a module's code named ``[jit …]``.

Each core is GDB's ``gcore`` of a real process (the toy JIT; CPython 3.14 with its JIT
on), copied without its NT_FILE note (its type made unknown) and, as qemu's cores also
are, without the contents of the files' executable segments (their file size 0: the
code must be read from the files) and without a vDSO (neither AT_SYSINFO_EHDR nor its
segment).  The plugin then finds the files from the auxv and the dynamic linker's list
in the core's memory.  When no list can be built at all (the program in the core is not
the file at hand), a file's executable segment the core has no bytes of is still never
taken for JIT code.
"""

import re
import shutil
import struct
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from jit_unwind.regions import RegionMap
from jit_unwind.regions.corefile import read_core_mappings
from tests.driver import driver
from tests.e2e.test_cli import jit_unwind
from tests.jit_python import jit_python
from tests.python_expect import SCRIPTS
from tests.support import GDB_BINARIES, GDB_INIT, fixture_binary, run_gdb

PT_NULL, PT_LOAD, PT_NOTE, PF_X = 0, 1, 4, 1
NT_AUXV, NT_FILE = 6, 0x46494C45
UNKNOWN_NOTE = 0x4649  # a type no reader knows: the note is skipped
AT_IGNORE, AT_ENTRY, AT_SYSINFO_EHDR = 1, 9, 33
KERNEL_SPACE = 0xFFFF800000000000

SUBJECTS = {
    "toyjit": (lambda: [fixture_binary("toyjit"), "fp", "2", "sigtrap"], {}),
    "py3.14-jit": (lambda: [jit_python("3.14"), SCRIPTS / "jit_scenarios.py", "kill"],
                   {"PYTHON_JIT": "1"}),
}
VARIANTS = ("no-file-note", "qemu-like")
# The walk reached the program's start: main (the toy JIT's last frame) or libc's caller
# of Py_BytesMain, in the debuggers' bt and in --debugger none's text.
OUTERMOST = {"gdb13": r" in (main|__libc_start_call_main) \(",
             "gdb18": r" in (main|__libc_start_call_main) \(",
             "lldb23": r"`(main|__libc_start_call_main)\("}
OUTERMOST_NONE = r"#\d+ +(main|__libc_start_call_main) at "


@pytest.fixture(scope="module")
def intact(tmp_path_factory):
    """GDB 13's gcore of each subject, made once: (program argv, core)."""
    made: Dict[str, Tuple[List, Path]] = {}
    transcripts = []

    def get(name: str):
        if name not in made:
            program, env = SUBJECTS[name]
            program = program()
            core = tmp_path_factory.mktemp(name) / "intact.core"
            transcripts.append(driver("gdb13").launch(program, [], env=env, core=core))
            made[name] = (program, core)
        return made[name]

    yield get
    for transcript in transcripts:
        transcript.remove_perf_files()


# --- editing a core's headers and notes ---------------------------------------------

def _headers(handle) -> List[Tuple[int, List[int]]]:
    """(file offset of the header, [p_type, p_flags, p_offset, p_vaddr, p_paddr,
    p_filesz, p_memsz, p_align]) of each program header."""
    handle.seek(0)
    header = handle.read(64)
    phoff = struct.unpack_from("<Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", header, 54)
    found = []
    for index in range(phnum):
        handle.seek(phoff + index * phentsize)
        found.append((phoff + index * phentsize,
                      list(struct.unpack("<IIQQQQQQ", handle.read(56)))))
    return found


def _notes(handle, headers):
    """(file offset of the note's type field, type, file offset of its body, body)."""
    for _at, (kind, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align) in headers:
        if kind != PT_NOTE:
            continue
        handle.seek(offset)
        data = handle.read(filesz)
        at = 0
        while at + 12 <= len(data):
            namesz, descsz, note = struct.unpack_from("<III", data, at)
            body = at + 12 + ((namesz + 3) & ~3)
            yield offset + at + 8, note, offset + body, data[body:body + descsz]
            at = body + ((descsz + 3) & ~3)


def file_ranges(core: Path) -> List[Tuple[int, int]]:
    """The NT_FILE note's (start, end) ranges."""
    with open(core, "rb") as handle:
        for _type_at, note, _body_at, body in _notes(handle, _headers(handle)):
            if note == NT_FILE:
                count = struct.unpack_from("<Q", body)[0]
                return [struct.unpack_from("<QQ", body, 16 + 24 * i) for i in range(count)]
    return []


def without_file_list(core: Path, dst: Path, variant: str) -> Path:
    """A copy of ``core`` without its NT_FILE note; ``qemu-like``: also without the
    bytes of the files' executable segments and without a vDSO; ``foreign-entry``:
    qemu-like, and its auxv's entry point not the program's (no list can be built)."""
    files = file_ranges(core)
    assert files, core
    shutil.copyfile(core, dst)
    with open(dst, "r+b") as handle:
        headers = _headers(handle)
        vdso = None
        for type_at, note, body_at, body in list(_notes(handle, headers)):
            if note == NT_FILE:
                handle.seek(type_at)
                handle.write(struct.pack("<I", UNKNOWN_NOTE))
            elif note == NT_AUXV and variant != "no-file-note":
                for at in range(0, len(body) - 15, 16):
                    key, value = struct.unpack_from("<QQ", body, at)
                    if key == AT_SYSINFO_EHDR:
                        vdso = value
                        handle.seek(body_at + at)
                        handle.write(struct.pack("<Q", AT_IGNORE))
                    elif key == AT_ENTRY and variant == "foreign-entry":
                        handle.seek(body_at + at + 8)
                        handle.write(struct.pack("<Q", value + 0x10))
        if variant == "no-file-note":
            return dst
        for at, fields in headers:
            kind, flags, _offset, vaddr = fields[:4]
            if kind != PT_LOAD or vaddr >= KERNEL_SPACE:
                continue
            if vaddr == vdso:
                fields[0] = PT_NULL
            elif flags & PF_X and any(start <= vaddr < end for start, end in files):
                fields[5] = 0  # p_filesz: qemu leaves a file's code out of its cores
            else:
                continue
            handle.seek(at)
            handle.write(struct.pack("<IIQQQQQQ", *fields))
    return dst


# --- what a user sees -----------------------------------------------------------------

def _commands(name: str, debugger: str) -> List[str]:
    regions = "jit-regions" if debugger.startswith("lldb") else "info jit-regions"
    return ["bt", regions, *(["py-mixed-bt"] if name.startswith("py") else [])]


def _shown(text: str) -> str:
    """A command's output without GDB's own warnings (a vDSO taken out of a core leaves
    GDB a link_map entry whose name it cannot read) and blank lines; the symbol
    file's private directory is each session's own."""
    return "\n".join(re.sub(r"/jit-unwind-\w+/", "/DIR/", line) for line in text.splitlines()
                     if line.strip() and not line.startswith("warning: "))


_JIT_START = re.compile(r"\[jit 0x([0-9a-f]+)\+")


def assert_no_module_named_jit(text: str, files: List[Tuple[int, int]]) -> None:
    starts = [int(start, 16) for start in _JIT_START.findall(text)]
    named = [hex(s) for s in starts if any(lo <= s < hi for lo, hi in files)]
    assert not named, f"module code named as JIT code at {named}:\n{text}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("gdb", ["gdb13", "gdb18", "lldb23"])
@pytest.mark.parametrize("name", list(SUBJECTS))
def test_debuggers_show_what_the_file_list_gave(intact, name, gdb, variant, tmp_path):
    program, core = intact(name)
    commands = _commands(name, gdb)
    expected = driver(gdb).open_core(program, core, commands)
    bt = expected.output("bt")
    assert "[jit" in bt and re.search(OUTERMOST[gdb], bt), bt
    copy = without_file_list(core, tmp_path / f"{variant}.core", variant)
    seen = driver(gdb).open_core(program, copy, commands)
    for command in commands:
        assert _shown(seen.output(command)) == _shown(expected.output(command)), (
            f"{command} on the core {variant}:\n{seen.output(command)}\n"
            f"with the file list:\n{expected.output(command)}")
        assert_no_module_named_jit(seen.output(command), file_ranges(core))
    assert "Traceback" not in seen.whole, seen.whole


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", list(SUBJECTS))
def test_without_a_debugger_the_same_text(intact, name, variant, tmp_path):
    program, core = intact(name)
    expected = jit_unwind("core", "--debugger", "none", core, program[0])
    assert "[jit" in expected.stdout and re.search(OUTERMOST_NONE, expected.stdout), expected
    copy = without_file_list(core, tmp_path / f"{variant}.core", variant)
    seen = jit_unwind("core", "--debugger", "none", copy, program[0])
    assert (seen.returncode, seen.stdout) == (expected.returncode, expected.stdout), (
        f"on the core {variant}:\n{seen.stdout}{seen.stderr}\nwith the file list:\n"
        f"{expected.stdout}")
    assert_no_module_named_jit(seen.stdout, file_ranges(core))
    assert "Traceback" not in seen.stderr, seen.stderr


def test_without_any_list_a_files_code_is_no_jit_code(intact, tmp_path):
    """The auxv's entry point is not the program's: no list is built, yet the
    segments the core holds no bytes of (the files' code) are not JIT regions, while
    the JIT's own code still is."""
    program, core = intact("toyjit")
    files = file_ranges(core)
    with_list, skip = read_core_mappings(str(core))
    jit = RegionMap(with_list, not_jit=skip, source="core").jit
    assert len(jit), with_list
    copy = without_file_list(core, tmp_path / "foreign.core", "foreign-entry")
    mappings, not_jit = read_core_mappings(str(copy), executable=str(program[0]))
    assert all(not m.path for m in mappings if m.start < KERNEL_SPACE), mappings
    regions = RegionMap(mappings, not_jit=not_jit, source="core")
    found = [(r.start, r.end) for r in regions.jit]
    assert found == [(r.start, r.end) for r in jit], found
    code = [m for m in mappings if m.executable and any(lo <= m.start < hi for lo, hi in files)]
    assert code and all(regions.jit_region_at(m.start) is None for m in code), code


@pytest.mark.parametrize("gdb", ["gdb13", "gdb18"])
def test_a_core_without_a_vdso_is_read_when_loaded(intact, gdb, tmp_path):
    """The plugin loaded before the core (as ~/.gdbinit loads it): GDB's own commands
    name a JIT frame from the symbol file the plugin loads once the core's last object
    file is in (the vDSO's, else the last library's), not only after a command of ours."""
    program, core = intact("py3.14-jit")
    bt = driver(gdb).open_core(program, core, ["bt"]).output("bt")
    level = re.search(r"^#(\d+) +0x[0-9a-f]+ in \[jit\] ", bt, re.M).group(1)
    shown = {}
    for variant, path in (("intact", core), ("qemu-like", without_file_list(
            core, tmp_path / "qemu-like.core", "qemu-like"))):
        output = run_gdb(GDB_BINARIES[gdb], [f"frame {level}", "info symbol $pc"], [program[0]],
                         core=path, plugin=False, early=[f"source {GDB_INIT}"])
        frame = re.search(rf"^#{level} .*$", output, re.M)
        symbol = re.search(r"^(\[jit\] .*) in section ", output, re.M)
        assert frame and " in [jit] " in frame.group(0) and symbol, output
        shown[variant] = (frame.group(0), symbol.group(1))
    assert shown["qemu-like"] == shown["intact"], shown
