"""The end-to-end scenarios, written once and run in every debugger (tests/driver.py):
GDB 13, GDB 18, LLDB 23 (frame provider) and lldb-19 (no providers), each live and on
a core file its debugger wrote of the same stop.

Each run checks the ``py-mixed-bt --json --all-threads`` document against what the
scenario's true stack is (tests/scenario_expect.py), and that the core's document is the
live one (thread names aside: a core keeps none).  The CPythons include the clang
tail-call build and a copy of it stripped as distributions ship it, made once per
session.  In LLDB 23 ``bt`` itself is checked
against the document: the same JIT frames with the same names, each Python frame right
after the native frame that runs it, the walk to the program's first frame, and
``frame select`` on every frame.
"""

import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List

import pytest

from tests.driver import MIXED_JSON, driver
from tests.jit_python import INTERPRETERS, JIT_MINORS, fixture_python, stripped_copy
from tests.lldb_driver import SELECT_EVERY_FRAME, parse_lldb_backtrace
from tests.python_expect import RECURSE, python_of
from tests.scenario_expect import (JIT_315, JIT_SCRIPT, PLAIN, TAIL_CALL,
                                   TAIL_CALL_STRIPPED, check_cpython_jit, check_recursion,
                                   check_toyjit)
from tests.support import fixture_binary

DEBUGGERS = ["gdb13", "gdb18", "lldb23", "lldb19"]
STRIPPED = "-stripped"


@dataclass
class Scenario:
    program: Callable[[pytest.FixtureRequest], List]  # the request gives fixtures
    check: Callable[[dict], None]
    env: Dict[str, str] = field(default_factory=dict)
    # The program registers JIT code through GDB's JIT interface (CPython 3.15).
    registers_jit_code: bool = False


# lldb-19 cannot write a core of a process whose JIT code its JIT loader made modules of
# ("Unable to get the size of module JIT(0x…)", with or without jit-unwind): such a
# scenario runs live with the loader on, then again with it off to write the core.
JIT_LOADER_OFF = "settings set plugin.jit-loader.gdb.enable off"


@pytest.fixture(scope="session")
def stripped_pythons(tmp_path_factory):
    """``copy(name)``: interpreter ``name``'s stripped copy (tests/jit_python.py), made
    once per session."""
    made = {}

    def copy(name):
        if name not in made:
            made[name] = stripped_copy(name, tmp_path_factory.mktemp("stripped"))
        return made[name]
    return copy


def interpreter(name, request):
    """The CPython ``name``: a test interpreter of tests/jit_python.py ("3.14"), its copy
    stripped as distributions ship it ("3.14-tailcall-stripped"), or a version
    (python_of: "3.12.1")."""
    if name.endswith(STRIPPED):
        return request.getfixturevalue("stripped_pythons")(name.removesuffix(STRIPPED))
    return fixture_python(name) if name in INTERPRETERS else python_of(name)


def toyjit(mode, depth, perf_map=False):
    return Scenario(
        lambda request: [fixture_binary("toyjit"), mode, str(depth), "sigtrap"]
        + (["--perf-map"] if perf_map else []),
        lambda document: check_toyjit(document, mode, depth, perf_map))


def recursion(python, perf, build=PLAIN):
    return Scenario(
        lambda request: [interpreter(python, request), *(["-X", "perf"] if perf else []),
                         RECURSE],
        lambda document: check_recursion(document, 3, perf, build))


def cpython_jit(python, scenario, build=PLAIN):
    return Scenario(lambda request: [interpreter(python, request), JIT_SCRIPT, scenario],
                    lambda document: check_cpython_jit(document, scenario, build),
                    env={"PYTHON_JIT": "1"}, registers_jit_code=build.shared_shim)


def perf_on_the_jit_build(flag):
    """3.15's JIT build, PYTHON_JIT=1 and ``-X perf``/``-X perf_jit``: CPython turns the
    JIT off ("JIT deactivated as perf profiling support is active"; it refuses
    sys.activate_stack_trampoline while the JIT is on), the trampolines run."""
    return Scenario(lambda request: [fixture_python("3.15-jit"), "-X", flag, RECURSE],
                    lambda document: check_recursion(document, 3, True),
                    env={"PYTHON_JIT": "1"})


SCENARIOS: Dict[str, Scenario] = {
    **{f"toyjit-{mode}-{depth}": toyjit(mode, depth)
       for mode in ("fp", "frameless", "mixed") for depth in (0, 1, 500)},
    "toyjit-mixed-3-perf-map": toyjit("mixed", 3, perf_map=True),
    "cpython-3.12-perf": recursion("3.12.1", perf=True),
    "cpython-3.13-perf": recursion("3.13.0", perf=True),
    "cpython-3.14-perf": recursion("3.14.6", perf=True),
    "cpython-3.15": recursion("3.15.0rc2", perf=False),
    "cpython-3.15-perf": recursion("3.15.0rc2", perf=True),
    "cpython-3.15-jit-perf": perf_on_the_jit_build("perf"),
    "cpython-3.15-jit-perf_jit": perf_on_the_jit_build("perf_jit"),
    **{f"cpython-{minor}-jit-{scenario}": cpython_jit(minor, scenario)
       for minor in JIT_MINORS for scenario in ("kill", "branchy", "nested", "recursion")},
    # The clang tail-call build (libpython3.14.so, _TAIL_CALL_<op> functions, the JIT),
    # as it is built and as distributions ship it, stripped.
    "cpython-3.14-tailcall": recursion("3.14-tailcall", perf=False),
    "cpython-3.14-tailcall-perf": recursion("3.14-tailcall", perf=True),
    "cpython-3.14-tailcall-stripped-perf": recursion("3.14-tailcall-stripped", perf=True,
                                                     build=TAIL_CALL_STRIPPED),
    **{f"cpython-{python}-jit-{scenario}": cpython_jit(python, scenario, build)
       for python, build in (("3.14-tailcall", TAIL_CALL),
                             ("3.14-tailcall-stripped", TAIL_CALL_STRIPPED),
                             ("3.15-jit", JIT_315))
       for scenario in ("kill", "branchy", "nested", "recursion")},
}


def without_thread_names(document):
    for thread in document["threads"]:
        thread.pop("name", None)
    return document


PY_FRAME = re.compile(r"^\[py\] (\S+) at (\S+):(\d+) \[synthetic\]$")
FRAME_PC = re.compile(r"frame #\d+: 0x([0-9a-f]+) (.*)$")
# A JIT frame LLDB names from our symbol file: "jit-PID-N.elf`NAME + OFFSET".
IN_SYMBOL_FILE = re.compile(r"^jit-\d+-\d+\.elf`(.*?)(?: \+ \d+)?$")


def jit_frame_name(text: str) -> str:
    """A JIT frame's name in LLDB's bt, as the provider gives it or from the module."""
    text = text.removesuffix(" [synthetic]")
    match = IN_SYMBOL_FILE.match(text)
    return match.group(1) if match else text


def check_jit_frames_named(output: str, document) -> None:
    """The document's JIT frames of the main thread, in order, each at its pc under
    its name in LLDB's bt."""
    frames = parse_lldb_backtrace(output)
    jit = [(f["pc"], f["function"]) for f in document["threads"][0]["frames"]
           if f["kind"] == "jit"]
    pcs = {pc for pc, _ in jit}
    listed_jit = [(int(match.group(1), 16), jit_frame_name(match.group(2)))
                  for match in map(FRAME_PC.search, (f.line for f in frames))
                  if match and int(match.group(1), 16) in pcs]
    assert listed_jit == jit, output


def check_lldb_bt(output: str, document) -> None:
    """LLDB 23's bt of the main thread lists what the document lists: the JIT frames
    (named alike), each Python frame after the native frame with its pc, and the walk
    to the outermost frame."""
    thread = document["threads"][0]
    frames = parse_lldb_backtrace(output)
    assert frames, output
    assert "unwind stopped" not in output and not any(
        f.function.startswith("??") for f in frames), output
    assert frames[-1].function.split(" ")[0] in (thread["frames"][-1]["function"], "_start"), \
        output
    check_jit_frames_named(output, document)
    # [(pc of the native frame, (function, file name, line))] of every [py] frame
    listed, pc = [], None
    for frame in frames:
        match = PY_FRAME.match(frame.function)
        if match:
            listed.append((pc, (match.group(1), match.group(2), int(match.group(3)))))
            continue
        found = FRAME_PC.search(frame.line)
        pc = int(found.group(1), 16) if found else None
    expected = [(f["pc"], (p["function"], p["file"].rsplit("/", 1)[-1], p["line"]))
                for f in thread["frames"] for p in f["python"]]
    assert listed == expected, output


def check_every_frame_selected(output: str) -> None:
    count = int(re.search(r"selecting (\d+) frames", output).group(1))
    selected = re.findall(r"^frame #(\d+): ", output, re.M)
    assert count > 3 and [int(n) for n in selected] == list(range(count)), output


@pytest.mark.parametrize("debugger", DEBUGGERS)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_live_and_core(name, debugger, tmp_path, request):
    scenario = SCENARIOS[name]
    tool = driver(debugger)
    program = scenario.program(request)
    core = tmp_path / tool.core_name()
    extra = []
    if debugger == "lldb23":
        extra = ["bt", SELECT_EVERY_FRAME]
    settings = []
    if debugger == "lldb19" and scenario.registers_jit_code:
        # bt names the frames in the loader's modules through jit-unwind's frame-format.
        loader_on = tool.launch(program, [MIXED_JSON, "bt"], env=scenario.env)
        try:
            scenario.check(loader_on.document())
            check_jit_frames_named(loader_on.output("bt"), loader_on.document())
        finally:
            loader_on.remove_perf_files()
        settings = [JIT_LOADER_OFF]
    live = tool.launch(program, [MIXED_JSON, *extra], env=scenario.env, core=core,
                       settings=settings)
    try:
        document = live.document()
        scenario.check(document)
        if debugger == "lldb23":
            check_lldb_bt(live.output("bt"), document)
            check_every_frame_selected(live.output(SELECT_EVERY_FRAME))
        from_core = tool.open_core(program, core, [MIXED_JSON, *extra])
        core_document = from_core.document()
        scenario.check(core_document)
        assert without_thread_names(core_document) == without_thread_names(document)
        if debugger == "lldb23":
            check_lldb_bt(from_core.output("bt"), core_document)
            check_every_frame_selected(from_core.output(SELECT_EVERY_FRAME))
    finally:
        live.remove_perf_files()
