"""node 20 (V8) with ``--perf-basic-prof``, stopped in ``kill()`` under JIT code, live and
on its core, in GDB 13, GDB 18 and LLDB 23: ``bt`` reaches ``_start`` with the
JavaScript functions named from the perf map, V8's builtins named, and no garbage frame.

``node_hot.js``: optimized code calls the API callback through V8's embedded builtins
remapped near the JIT code (a second, file-backed mapping of node's executable).
``node_deopt.js``: a deoptimization rebuilt four interpreter frames whose return
addresses the deoptimizer planted (``Builtins_InterpreterEnterAtNextBytecode+0``, no
call before them).  Plain GDB shows three true frames, then dozens of garbage ones.
"""

import re
import shutil

import pytest

from tests.driver import driver
from tests.support import GDB_BINARIES, PRINT_PID, REPO, remove_perf_map, run_gdb

NODE = shutil.which("node") or "/usr/bin/node"
RUNTIMES = REPO / "tests" / "fixtures" / "runtimes"
# --logfile: V8 would write an isolate-*.log beside the test run for the perf map's sake.
FLAGS = ["--perf-basic-prof", "--logfile=/dev/null"]
DEBUGGERS = ["gdb13", "gdb18", "lldb23"]

# The true frames from the signal to the entry into JavaScript, innermost first.
BELOW_JS = ["kill", "uv_kill", "node::Kill"]
ABOVE_JS = ["JSEntryTrampoline", "JSEntry", "v8::internal::Execution::Call",
            "node::Start", "__libc_start_call_main", "_start"]


def program(script):
    return [NODE, *FLAGS, str(RUNTIMES / script)]


def frame_lines(text):
    """The frame lines of ``bt`` (GDB's ``#N``, LLDB's ``frame #N:``) of the thread that
    stopped in kill()."""
    threads = re.split(r"^\s*\*? ?thread #\d+.*$", text, flags=re.M)
    text = next((part for part in threads if re.search(r"\bkill\b", part)), text)
    lines = [line for line in text.splitlines() if re.match(r"\s*(\* )?(frame )?#\d+", line)]
    start = next((i for i, line in enumerate(lines) if re.search(r"\bkill\b", line)), 0)
    return lines[start:]


def unnamed(line):
    """True for a frame with no function: GDB's ``?? ()``, LLDB's bare address."""
    return " in ?? " in line or re.search(r"frame #\d+: 0x[0-9a-f]+\s*(\[|$)", line)


def in_order(lines, names):
    """The index of each of ``names`` among ``lines``, each found after the last."""
    found, at = [], 0
    for name in names:
        at = next((i for i in range(at, len(lines)) if name in lines[i]), None)
        assert at is not None, f"{name} missing or out of order:\n" + "\n".join(lines)
        found.append(at)
    return found


def assert_true_stack(text, js_names):
    lines = frame_lines(text)
    listing = "\n".join(lines)
    assert not any(unnamed(line) for line in lines), listing
    assert "[guess" not in listing and "unwind stopped" not in listing, listing
    in_order(lines, BELOW_JS + js_names + ABOVE_JS)
    return lines


@pytest.fixture(scope="module", params=["node_hot.js", "node_deopt.js"])
def script(request):
    return request.param


def expected_js(script):
    """What the perf map names of the script's frames (leaf may be inlined)."""
    if script == "node_hot.js":
        return ["JS:", "middle", "JS:", "hot"]
    # After the deoptimization the four frames are the interpreter's: the planted
    # return addresses are named for the builtin they enter.
    return ["InterpreterEnterAtNextBytecode"] * 3


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_node_bt_live_and_core(script, debugger, tmp_path):
    chosen = driver(debugger)
    core = tmp_path / chosen.core_name()
    live = chosen.launch(program(script), ["bt"], core=core)
    try:
        lines = assert_true_stack(live.output("bt"), expected_js(script))
        if script == "node_hot.js":
            # The builtin that called node::Kill runs from the remapped copy.
            assert "CallApiCallback" in lines[3], "\n".join(lines)
        command = "bt" if debugger.startswith("gdb") else "thread backtrace all"
        opened = chosen.open_core(program(script), core, [command])
        lines = assert_true_stack(opened.output(command), expected_js(script))
        if script == "node_hot.js":  # named on LLDB's minidump too: from its maps' offsets
            assert "CallApiCallback" in lines[3], "\n".join(lines)
    finally:
        live.remove_perf_files()


def test_never_fewer_true_frames_than_plain_gdb(script):
    """Every frame plain GDB names on this stack (its true frames, and the return
    addresses its garbage frames happen to hit) the plugin shows too, in order: the
    same pcs (the plugin names V8's builtins from the perf map, GDB from node's
    symbols)."""
    plain = run_gdb(GDB_BINARIES["gdb13"], ["run", PRINT_PID, "bt"], program(script),
                    plugin=False)
    remove_perf_map(plain)
    pcs = [line.split()[1] for line in frame_lines(plain) if " in ?? " not in line]
    assert len(pcs) >= 3, plain
    live = driver("gdb13").launch(program(script), ["bt"])
    try:
        lines = frame_lines(live.output("bt"))
        in_order(lines, [f"{pc} in " if pc.startswith("0x") else pc for pc in pcs])
        assert len(lines) > len(pcs)
    finally:
        live.remove_perf_files()


def test_a_second_session_reads_nodes_code_without_cfi_from_disk(tmp_path):
    """Without a perf map, the first ``bt`` of a session works out the code no CFI
    covers around its pcs (V8's builtins) and the function symbols there (a search of
    node's 110,000 symbols); they are kept in $XDG_CACHE_HOME/jit-unwind/elf-facts.
    On node's core: a second GDB session prints the same frames from the entries the
    first wrote, without writing them again, and a session with JIT_UNWIND_ELF_CACHE=0
    the same frames, writing nothing."""
    script = [NODE, "--logfile=/dev/null", str(RUNTIMES / "node_hot.js")]
    core = tmp_path / "node.core"
    output = run_gdb(GDB_BINARIES["gdb18"], ["run", f"gcore {core}"], script, plugin=False)
    assert core.exists(), output

    def session(cache_home, *settings):
        early = [f"python import os; os.environ['XDG_CACHE_HOME'] = '{cache_home}'",
                 *[f"python os.environ['{setting}'] = '0'" for setting in settings]]
        return frame_lines(run_gdb(GDB_BINARIES["gdb13"], ["bt"], script, core=core,
                                   early=early))

    try:
        first = session(tmp_path / "cache")
        listing = "\n".join(first)
        in_order(first, BELOW_JS + ABOVE_JS)
        assert "CallApiCallback" in listing and "unwind stopped" not in listing, listing
        entries = sorted((tmp_path / "cache" / "jit-unwind" / "elf-facts").glob("*.fact"))
        assert any("-nocfi-pc-functions-" in entry.name for entry in entries), entries
        written = [entry.stat().st_mtime_ns for entry in entries]
        assert session(tmp_path / "cache") == first
        assert [entry.stat().st_mtime_ns for entry in entries] == written
        assert session(tmp_path / "off", "JIT_UNWIND_ELF_CACHE") == first
        assert not (tmp_path / "off").exists()
    finally:
        core.unlink(missing_ok=True)
