"""Runtime entry records (issue 20; plugin/jit_unwind/unwind/runtime_entries.py) on the
real runtimes: stopped in native code under JIT code, the frame of the runtime's entry
code is unwound ``[via entry-record]``, and its native caller gets the callee-saved
registers it really has: those it finds when the JIT code returns through the entry
code, read live at a breakpoint where that caller resumes (its pc, its sp).  The JIT code
between clobbered them, so passing them through would be wrong.  The same registers on
the core taken at the stop; the walk reaches _start with no garbage frame
(tests/process_snapshot.py).  HotSpot's call stub: tests/e2e/test_jit_runtimes.py.

gjs 1.74 (SpiderMonkey, mozjs 102): EnterJIT's frame, found from the frame descriptor
it pushed (Ion keeps no rbp), whose caller is js::jit's EnterJit in libmozjs.  node 20
(V8): Builtins_JSEntry's frame, with and without a perf map (without one, node's
builtins are code without CFI), whose caller is v8::internal's Invoke.
"""

import re
from dataclasses import dataclass
from typing import Callable, List, Tuple

import pytest

from tests.driver import driver
from tests.e2e.test_jit_runtimes import (GJS_IGNORE, GJS_RECURSION_IGNORE, RUNTIMES_DIR,
                                         _tool, frames_of, garbage, read_snapshot,
                                         snapshot_command)
from tests.support import REPO

ORACLE = f"python import sys; sys.path.insert(0, {str(REPO)!r}); import tests.entry_oracle as o; "
SHOW_METHOD = "set jit-unwind show-method on"


@dataclass(frozen=True)
class Scenario:
    argv: Callable[[], List[str]]
    setup: Tuple[str, ...]
    caller: str  # the entry code's native caller: a pattern of its file and name (no
    # backslash: GDB's echo of the command, which marks its output, would drop it)
    lldb_setup: Tuple[str, ...]


def _gjs(script: str, ignore: int) -> Scenario:
    return Scenario(lambda: [_tool("gjs"), str(RUNTIMES_DIR / script)],
                    ("set breakpoint pending on", "break sin", f"ignore 1 {ignore}"),
                    "libmozjs", (f"breakpoint set -n sin -i {ignore}",))


def _node(*flags: str) -> Scenario:
    return Scenario(lambda: [_tool("node"), *flags, "--logfile=/dev/null",
                             str(RUNTIMES_DIR / "node_hot.js")],
                    (), "internal::[(]anonymous namespace[)]::Invoke[(]", ())


SCENARIOS = {
    "gjs": _gjs("hot_sin.js", GJS_IGNORE),  # Ion code called from EnterJIT on OSR
    "gjs-recursion": _gjs("recursive_sin.js", GJS_RECURSION_IGNORE),  # Baseline and Ion
    "node-perfmap": _node("--perf-basic-prof"),
    "node": _node(),
}


def registers(text: str, tag: str) -> dict:
    match = re.search(rf"^{tag} level=(\d+) (.*)$", text, re.M)
    assert match, text
    return {"level": int(match.group(1)),
            **{name: int(value, 16) for name, value in re.findall(r"(\w+)=(0x[0-9a-f]+)",
                                                                 match.group(2))}}


@pytest.mark.parametrize("scenario_name", sorted(SCENARIOS))
@pytest.mark.parametrize("name", ["gdb13", "gdb18"])
def test_entry_caller_gets_the_registers_it_resumes_with(name, scenario_name, tmp_path):
    scenario = SCENARIOS[scenario_name]
    debugger = driver(name)
    core = tmp_path / debugger.core_name()
    find = ORACLE + f"o.find_caller({scenario.caller!r})"
    live = debugger.launch(scenario.argv(),
                           ["bt", snapshot_command(name, tmp_path), find, f"gcore {core}",
                            ORACLE + "o.arm()", "continue", ORACLE + "o.at_return()", "kill"],
                           settings=(*scenario.setup, SHOW_METHOD))
    live.remove_perf_files()
    truth = registers(live.output(ORACLE + "o.at_return()"), "at-return")
    from_core = debugger.open_core(scenario.argv(), core, [SHOW_METHOD, "bt", find])
    core.unlink()
    mappings = read_snapshot(tmp_path)
    for transcript in (live, from_core):
        shown = registers(transcript.output(find), "entry-caller")
        frames = frames_of(transcript)
        listing = "\n".join(f.line for f in frames)
        # The entry frame may itself be found by a scan (gjs-recursion: a guess), its
        # caller is no guess.
        assert "[via entry-record]" in frames[shown["level"] - 1].line, listing
        assert "[guess" not in frames[shown["level"]].line, listing
        assert garbage(frames, mappings, tmp_path) == [], listing
        assert "__libc_start_main" in frames[-2].line, listing  # then _start
        # The caller resumes at the pc and sp shown, with the registers shown.
        assert {k: v for k, v in shown.items() if k != "level"} == \
            {k: v for k, v in truth.items() if k != "level"}, \
            f"{listing}\nshown: {shown}\nat return: {truth}\n{transcript.whole}"


# LLDB 23 shows how a frame was unwound only for JIT code: node's JSEntry is a builtin
# in node's own file (its walk in LLDB: tests/e2e/test_node.py).
@pytest.mark.parametrize("scenario_name", ["gjs", "gjs-recursion"])
def test_lldb_unwinds_the_entry_frame_by_its_record(scenario_name, tmp_path):
    """LLDB 23 (the shared walk), live and on its core: the entry frame unwound by its
    entry record, then its native caller, to _start with no garbage.  (LLDB shows no
    registers in the frames of the plugin's scripted thread: the registers are GDB's
    test above.)"""
    scenario = SCENARIOS[scenario_name]
    debugger = driver("lldb23")
    core = tmp_path / debugger.core_name()
    commands = ["jit-unwind show-method on", "bt"]
    live = debugger.launch(scenario.argv(), [*commands, snapshot_command("lldb23", tmp_path)],
                           core=core, settings=scenario.lldb_setup)
    live.remove_perf_files()
    from_core = debugger.open_core(scenario.argv(), core, commands)
    core.unlink()
    mappings = read_snapshot(tmp_path)
    for transcript in (live, from_core):
        frames = frames_of(transcript)
        listing = "\n".join(f.line for f in frames)
        entry = next((i for i, f in enumerate(frames) if "[via entry-record]" in f.line), None)
        assert entry is not None, listing
        assert re.search(scenario.caller, frames[entry + 1].line), listing
        assert "[guess" not in frames[entry + 1].line, listing
        assert garbage(frames, mappings, tmp_path) == [], listing
        assert "__libc_start_main" in frames[-2].line, listing  # then _start
