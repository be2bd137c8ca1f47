"""JIT runtimes we did not write (issue 20), stopped in native code called from JIT code
(tests/fixtures/runtimes/): SpiderMonkey (gjs) Ion code calling libm's sin, HotSpot
(OpenJDK 17) C2 code calling Thread.sleep (without and with -XX:+PreserveFramePointer
and a perf map), Ruby 3.1 YJIT code calling Process.kill, a LuaJIT 2.1 trace calling
raise() through the FFI.  In GDB 13, GDB 18 and LLDB 23, live and on the debugger's own
core: no Python failure, the stop frame, never fewer true frames than plain GDB 13 shows,
no garbage frame; Ruby and LuaJIT reach main/_start, HotSpot clone3 with every Java
frame (Hot.main's interpreter frame too).  What does not hold yet: docs/runtimes.md,
"Known gaps".

A caller frame is *garbage* when its pc is in no executable mapping of the process, or
when the debugger has no symbol for it (``?? ()``, a JIT frame) and the bytes before it
are no call instruction (a return address always follows one); every other frame is
*true*.  Named frames in a file's code are not checked for a call: GDB shows tail calls
and inlined functions from debug info at pcs after a jump.  The mappings and the JIT
code are copied while the process is stopped (tests/process_snapshot.py); the core's
backtrace is checked against that copy.
"""

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from tests.driver import Transcript, driver
from tests.lldb_driver import parse_lldb_backtrace
from tests.support import (GDB_BINARIES, PRINT_PID, REPO, fixture_binary, parse_backtrace,
                           remove_perf_map, run_gdb)

RUNTIMES_DIR = REPO / "tests" / "fixtures" / "runtimes"
SNAPSHOT = (f"import sys; sys.path.insert(0, {str(REPO)!r}); "
            "from tests.process_snapshot import snapshot; snapshot({pid}, {directory!r})")
GDB_PID, LLDB_PID = "gdb.selected_inferior().pid", "lldb.process.GetProcessID()"
# Ruby's and gjs's executables are stripped (main is "??"): their walk ends at _start.
# The JVM runs main in a thread of its own: its walk ends at clone3.
ENDS = {"main", "_start", "clone3", "__clone3"}


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is missing: run `make apt-deps`"
    return path


# Java: a small heap and one GC thread keep the cores small; -Xbatch compiles in the
# calling thread, so the breakpoint's ignore count passes the same warm-up every run.
JAVA_OPTIONS = ("-Xbatch", "-Xmx64m", "-XX:+UseSerialGC", "-XX:ReservedCodeCacheSize=32m")
# Hot.java sleeps on every 1024th call; its perf map is written at call 30000.
JAVA_IGNORE = 30000 // 1024
GJS_IGNORE = 50  # hot_sin.js calls sin on every 64th iteration; Ion runs it by then
GJS_RECURSION_IGNORE = 50  # recursive_sin.js: every 256th iteration, 7 calls deep


@dataclass(frozen=True)
class Runtime:
    argv: Callable[[], List[str]]
    stops: Tuple[str, ...]  # the function of frame #0, as the debuggers name it
    gdb_setup: Tuple[str, ...] = ()
    lldb_setup: Tuple[str, ...] = ()
    to_the_end: bool = False  # the walk reaches main/_start without garbage today
    java: bool = False  # HotSpot: every Java frame shown (assert_java_frames)


def _java(*flags: str) -> Callable[[], List[str]]:
    def argv() -> List[str]:
        classes = fixture_binary("runtimes/Hot.class").parent
        return [_tool("java"), *JAVA_OPTIONS, *(f for f in flags if f.startswith("-")),
                "-cp", str(classes), "Hot", *(f for f in flags if not f.startswith("-"))]
    return argv


def _java_runtime(*flags: str) -> Runtime:
    return Runtime(_java(*flags), ("JVM_Sleep",), to_the_end=True, java=True, gdb_setup=
                   ("set breakpoint pending on", "handle SIGSEGV nostop noprint pass",
                    "break JVM_Sleep", f"ignore 1 {JAVA_IGNORE}"),
                   lldb_setup=(f"breakpoint set -n JVM_Sleep -i {JAVA_IGNORE}",
                    "process handle SIGSEGV -s false -n false -p true"))


RUNTIMES: Dict[str, Runtime] = {
    "gjs": Runtime(lambda: [_tool("gjs"), str(RUNTIMES_DIR / "hot_sin.js")], ("__sin_fma",),
                   ("set breakpoint pending on", "break sin", f"ignore 1 {GJS_IGNORE}"),
                   (f"breakpoint set -n sin -i {GJS_IGNORE}",)),
    "gjs-recursion": Runtime(lambda: [_tool("gjs"), str(RUNTIMES_DIR / "recursive_sin.js")],
                             ("__sin_fma",), ("set breakpoint pending on", "break sin",
                                              f"ignore 1 {GJS_RECURSION_IGNORE}"),
                             (f"breakpoint set -n sin -i {GJS_RECURSION_IGNORE}",)),
    "hotspot": _java_runtime(),
    "hotspot-fp-perfmap": _java_runtime("-XX:+PreserveFramePointer", "perfmap"),
    "ruby-yjit": Runtime(lambda: [_tool("ruby"), "--yjit", str(RUNTIMES_DIR / "hot_cfunc.rb")],
                         ("__GI_kill", "kill"), to_the_end=True),
    "luajit": Runtime(lambda: [_tool("luajit"), str(RUNTIMES_DIR / "hot_ffi.lua")],
                      ("__pthread_kill_implementation",), to_the_end=True),
}


@dataclass
class Mapping:
    start: int
    end: int
    perms: str
    offset: int
    path: str


def parse_maps(text: str) -> List[Mapping]:
    mappings = []
    for line in text.splitlines():
        match = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ \d+\s*(.*)$",
                         line.strip())
        if match:
            mappings.append(Mapping(int(match.group(1), 16), int(match.group(2), 16),
                                    match.group(3), int(match.group(4), 16),
                                    match.group(5).strip()))
    return mappings


def _follows_call(code: bytes) -> bool:
    """``code`` (the bytes right before a return address) ends with a call: e8 rel32,
    or ff /2 in its register and memory forms (optional REX prefix)."""
    if len(code) >= 5 and code[-5] == 0xE8:
        return True
    for length in (2, 3, 4, 6, 7, 8):
        candidate = code[-length:]
        rex = 1 if 0x40 <= candidate[0] <= 0x4F else 0
        if len(candidate) < rex + 2 or candidate[rex] != 0xFF:
            continue
        modrm = candidate[rex + 1]
        mod, reg, rm = modrm >> 6, (modrm >> 3) & 7, modrm & 7
        if reg != 2:
            continue
        size = 2 + rex + (rm == 4 and mod != 3)  # a SIB byte
        size += {0: 4 if rm == 5 else 0, 1: 1, 2: 4, 3: 0}[mod]
        if mod == 0 and rm == 4 and (code[-length + rex + 2] & 7) == 5:
            size += 4  # SIB without base: disp32
        if size == length:
            return True
    return False


def snapshot_command(debugger: str, directory: Path) -> str:
    """The command that copies the stopped process's mappings and JIT code into
    ``directory`` (tests/process_snapshot.py)."""
    lldb = debugger.startswith("lldb")
    code = SNAPSHOT.format(pid=LLDB_PID if lldb else GDB_PID, directory=str(directory))
    return f"script {code}" if lldb else f"python {code}"


def read_snapshot(directory: Path) -> List[Mapping]:
    maps = directory / "maps"
    assert maps.exists(), f"no snapshot in {directory}"
    return parse_maps(maps.read_text())


def _code(pc: int, size: int, mapping: Mapping, directory: Path) -> Optional[bytes]:
    """``size`` bytes at ``pc`` (negative: before it): from the mapped file, or the
    snapshot of anonymous code; None when neither has them."""
    start = pc + min(size, 0)
    if mapping.path.startswith("/"):
        path, offset = Path(mapping.path), mapping.offset + start - mapping.start
    else:
        path, offset = directory / f"{mapping.start:x}.bin", start - mapping.start
    if offset < 0 or not path.exists():
        return None
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read(abs(size))


# HotSpot's interpreter pushes the return entry of an invoke bytecode and jumps to the
# callee: no call before it.  The entry starts by restoring rsp from the frame
# (TemplateInterpreterGenerator::generate_return_entry_for):
# mov rsp,[rbp-0x10]; movq [rbp-0x10],0.
INTERPRETER_RETURN_ENTRY = bytes.fromhex("488b65f0" "48c745f000000000")


def garbage_reason(pc: int, unnamed: bool, mappings: List[Mapping],
                   directory: Path) -> Optional[str]:
    """Why a caller frame's pc is no return address, or None when it may be one.  A
    frame without a name in a file's code must follow a call; a named one need not (GDB
    shows tail calls and inlined functions from debug info at pcs after a jump)."""
    mapping = next((m for m in mappings if m.start <= pc < m.end), None)
    if mapping is None:
        return "in no mapping"
    if "x" not in mapping.perms:
        return f"in {mapping.perms} memory"
    if unnamed and not mapping.path.startswith("["):  # [vdso]: named frames only
        code = _code(pc, -8, mapping, directory)
        planted = _code(pc, len(INTERPRETER_RETURN_ENTRY), mapping, directory)
        if code is not None and not _follows_call(code) and planted != INTERPRETER_RETURN_ENTRY:
            return f"after no call in {mapping.path or 'anonymous code'}"
    return None


@dataclass
class Frame:
    level: int
    pc: Optional[int]
    function: str
    line: str


def frames_of(transcript: Transcript, command: str = "bt") -> List[Frame]:
    text = transcript.output(command)
    if transcript.debugger.startswith("lldb"):
        parsed = [(f.level, f.function, f.line) for f in parse_lldb_backtrace(text)]
        address = re.compile(r"frame #\d+: (0x[0-9a-f]+)")
    else:
        parsed = [(f.level, f.function, f.line) for f in parse_backtrace(text)]
        address = re.compile(r"^#\d+\s+(0x[0-9a-f]+) in ")
    frames = []
    for level, function, line in parsed:
        match = address.search(line)
        if match is None and function.startswith("["):
            continue  # LLDB's pc-less line of marks ("[unwind stopped: ...]"): no frame
        frames.append(Frame(level, int(match.group(1), 16) if match else None,
                            function.split(" [")[0], line))
    return frames


def garbage(frames: List[Frame], mappings: List[Mapping], directory: Path) -> List[str]:
    found = []
    for frame in frames[1:]:
        unnamed = frame.function.startswith(("??", "___lldb_unnamed_symbol", "["))
        reason = garbage_reason(frame.pc, unnamed, mappings, directory) \
            if frame.pc is not None else "no pc"
        if reason:
            found.append(f"{frame.line}: {reason}")
    return found


def true_frames(frames: List[Frame], mappings: List[Mapping], directory: Path) -> int:
    return len(frames) - len(garbage(frames, mappings, directory))


@dataclass
class Reference:
    """Plain GDB 13's backtrace of a runtime (no plugin)."""
    frames: List[Frame]
    true: int


@pytest.fixture(scope="module")
def plain_gdb(tmp_path_factory):
    found: Dict[str, Reference] = {}

    def reference(name: str) -> Reference:
        if name not in found:
            runtime = RUNTIMES[name]
            directory = tmp_path_factory.mktemp(f"plain-{name}")
            output = run_gdb(GDB_BINARIES["gdb13"],
                             [*runtime.gdb_setup, "run", PRINT_PID, "echo @@bt\\n", "bt",
                              snapshot_command("gdb13", directory)], runtime.argv(),
                             plugin=False)
            remove_perf_map(output)  # HotSpot's, asked for by the program itself
            transcript = Transcript("gdb13", ["bt"], [output.split("@@bt\n", 1)[-1]], output)
            frames = frames_of(transcript)
            found[name] = Reference(frames, true_frames(frames, read_snapshot(directory),
                                                        directory))
        return found[name]
    return reference


@pytest.mark.parametrize("runtime_name", sorted(RUNTIMES))
@pytest.mark.parametrize("name", ["gdb13", "gdb18", "lldb23"])
def test_backtrace_from_native_code_called_by_jit_code(name, runtime_name, tmp_path,
                                                       plain_gdb):
    runtime = RUNTIMES[runtime_name]
    reference = plain_gdb(runtime_name)
    debugger = driver(name)
    core = tmp_path / debugger.core_name()
    registers = entry_commands(name) if runtime.java else []
    live = debugger.launch(runtime.argv(), ["bt", snapshot_command(name, tmp_path),
                                            *registers],
                           core=core, settings=runtime.lldb_setup
                           if name.startswith("lldb") else runtime.gdb_setup)
    live.remove_perf_files()
    from_core = debugger.open_core(runtime.argv(), core, ["bt", *registers])
    mappings = read_snapshot(tmp_path)
    for transcript in (live, from_core):
        frames = frames_of(transcript)
        listing = "\n".join(f.line for f in frames)
        assert frames and frames[0].function in runtime.stops, transcript.whole
        assert true_frames(frames, mappings, tmp_path) >= reference.true, \
            f"{listing}\nplain GDB 13:\n" + "\n".join(f.line for f in reference.frames)
        assert garbage(frames, mappings, tmp_path) == [], listing
        # One mark says each guess: a frame and its caller found by scan are one mark.
        doubled = [line for line in transcript.output("bt").splitlines()
                   if line.count("found by stack scan") > 1]
        assert doubled == [], transcript.output("bt")
        if runtime.to_the_end:
            assert frames[-1].function in ENDS, listing
        if runtime.java:
            assert_java_frames(frames, mappings, tmp_path)
            if registers:
                assert_entry_registers(transcript, registers)


# The registers HotSpot's call stub saves for its caller, JavaCalls::call_helper, at
# rbp - 88 up to rbp - 56 (r15 to rbx); frame #4 is the stub's, #5 call_helper's.
SAVED = ("r15", "r14", "r13", "r12", "rbx")


def entry_commands(debugger: str) -> List[str]:
    if debugger.startswith("lldb"):
        # LLDB 23 shows no registers in the frames of the plugin's scripted thread
        # (`register read`: "invalid frame, no registers"), and `memory read --
        # $rbp-88` in the stub's frame kills it (SIGSEGV): the walk is the same.
        return []
    return ["frame 4", "x/5gx $rbp-88", "frame 5", f"info registers {' '.join(SAVED)}"]


def assert_entry_registers(transcript: Transcript, commands: List[str]):
    """In call_helper's frame, the registers the call stub saved for it (the Java code
    it called clobbered them): the entry record of HotSpot's call stub."""
    saved_text, registers_text = transcript.output(commands[1]), transcript.output(commands[3])
    saved = [int(v, 16) for line in saved_text.splitlines() if ":" in line
             for v in re.findall(r"0x[0-9a-f]+", line.split(":", 1)[1])]
    found = dict(re.findall(r"\b(r1[2-5]|rbx)\s*=?\s+(0x[0-9a-f]+)", registers_text))
    registers = [int(found[name], 16) if name in found else None for name in SAVED]
    assert len(saved) == len(SAVED) and registers == saved, \
        f"{transcript.whole}\nsaved by the call stub: {saved}\ncall_helper's: {registers}"


def assert_java_frames(frames: List[Frame], mappings: List[Mapping], directory: Path):
    """Between JVM_Sleep and JavaCalls::call_helper, the 4 frames of JIT code: the native
    method's wrapper (Thread.sleep), C2's Hot.hot, Hot.main in the interpreter (its
    return address one of the interpreter's return entries, planted with no call before
    it), the call stub."""
    listing = "\n".join(f.line for f in frames)
    helper = next((i for i, f in enumerate(frames) if "JavaCalls::call_helper" in f.function),
                  None)
    assert helper == 5, listing
    main = frames[3]
    mapping = next((m for m in mappings if m.start <= main.pc < m.end), None)
    assert mapping is not None and _code(main.pc, len(INTERPRETER_RETURN_ENTRY), mapping,
                                         directory) == INTERPRETER_RETURN_ENTRY, listing
    named = [f.function for f in frames[1:5]]
    if any("Hot.hot" in name for name in named):  # a perf map names them
        assert ["Hot.hot" in name for name in named] == [False, True, False, False], listing
        assert "Interpreter" in named[2] and "StubRoutines" in named[3], listing
