"""What a correct ``py-mixed-bt --json --all-threads`` document of each end-to-end
scenario holds, whichever debugger printed it (tests/e2e/test_scenarios.py).

Every check reads the document only: frames by kind, name and pc, Python frames by
function, file and line, both per thread and under the native frame that runs them.
"""

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

from tests.python_expect import RECURSE, SCRIPTS, expected_recursion, marks
from tests.toyjit_expect import expected_frames

JIT_SCRIPT = SCRIPTS / "jit_scenarios.py"
EVAL = "_PyEval_EvalFrameDefault"
TRACE = re.compile(r"^\[jit\] (\S+) \((.+):(\d+)\) trace (0x[0-9a-f]+)$")
SHIM = re.compile(r"^\[jit shim\] (\S+) \((.+):(\d+)\)$")
# An entry shim is a few dozen bytes at the start of its executor's mapping.
SHIM_BOUND = 0x100
# What a debugger may list after main: libc's frames that call it.
AFTER_MAIN = {"__libc_start_call_main", "__libc_start_main_impl", "_start"}

Entry = Tuple[str, str, int]
# A function without a symbol: GDB prints its pc, LLDB a name of its own making.
UNNAMED = r"0x[0-9a-f]+|___lldb_unnamed_symbol_?[0-9a-f]+"


@dataclass(frozen=True)
class Build:
    """How a build of CPython shows the native frames where builds differ."""
    tail_call: bool = False  # clang's tail-calling interpreter: _TAIL_CALL_<op> functions
    stripped: bool = False  # strip --strip-unneeded: static functions have no name
    # 3.15: every trace is entered through _PyJIT_Entry, a function of the interpreter
    # (the CFI CPython registers for a trace through GDB's JIT interface skips it; the
    # plugin unwinds the trace into it): the shim frame is that native function.
    shared_shim: bool = False

    def static(self, pattern: str) -> str:
        """How this build names a static function (a pattern)."""
        return UNNAMED if self.stripped else pattern

    @property
    def enters_jit(self) -> Optional[str]:
        """The frame between a JIT entry shim and its eval loop (a pattern), or None when
        the eval loop calls the shim: a tail-calling interpreter enters a trace from the
        function of the instruction that does."""
        if not self.tail_call:
            return None
        return self.static(r"_TAIL_CALL_(ENTER_EXECUTOR|JUMP_BACKWARD_JIT)")

    @property
    def outermost(self) -> str:
        """The program's first frame (a pattern): ``_start``, which only LLDB names in a
        stripped executable (its entry point)."""
        return f"_start|{UNNAMED}" if self.stripped else "_start"


# CPython 3.15's one entry function of every JIT trace.
SHARED_SHIM = "_PyJIT_Entry"

PLAIN = Build()
JIT_315 = Build(shared_shim=True)
TAIL_CALL = Build(tail_call=True)
TAIL_CALL_STRIPPED = Build(tail_call=True, stripped=True)


def python_entries(entries) -> List[Entry]:
    return [(e["function"], e["file"], e["line"]) for e in entries]


def main_thread(document):
    threads = document["threads"]
    assert threads, document
    return threads[0]


def listing(frames) -> str:
    return "\n".join(f"#{f['level']} {f['kind']} {f['function']} {f['python'] and '+py'}"
                     for f in frames)


def check_walk(thread, outermost=("_start",)):
    """Every frame named, none a guess or the end of a walk cut short, and the walk
    reaches one of ``outermost`` (patterns), or a thread's first frame."""
    frames = thread["frames"]
    text = listing(frames)
    assert thread["stop_reason"] is None, text
    for frame in frames:
        assert frame["function"] and not frame["function"].startswith("??"), text
        assert not frame["guess"] and frame["stop_reason"] is None, text
    assert any(re.fullmatch(pattern, frames[-1]["function"])
               for pattern in (*outermost, "clone3", "clone")), text


def check_toyjit(document, mode: str, depth: int, perf_map: bool) -> None:
    """Exactly the toy JIT's true frames from toy_stop to main, JIT frames named."""
    thread = main_thread(document)
    frames = thread["frames"]
    text = listing(frames)
    names = [f["function"] for f in frames]
    assert "toy_stop" in names and "main" in names, text
    start, end = names.index("toy_stop"), names.index("main") + 1
    assert set(names[end:]) <= AFTER_MAIN, text
    expected = expected_frames(mode, depth, perf_map)
    actual = frames[start:end]
    assert len(actual) == len(expected), f"expected {len(expected)} frames:\n{text}"
    for frame, (pattern, method) in zip(actual, expected):
        assert re.fullmatch(pattern, frame["function"]), f"{frame['function']!r} !~ {pattern}"
        assert (frame["kind"] == "jit") == bool(method), text
    check_walk(thread, outermost=("main", "_start"))
    assert document["python_version"] is None and thread["python"] == []


def check_recursion(document, depth: int, perf: bool, build: Build = PLAIN) -> None:
    """recurse_sigtrap.py DEPTH: the Python stack per thread and under each eval loop,
    and with -X perf one trampoline per Python call, right above its eval loop."""
    thread = main_thread(document)
    frames = thread["frames"]
    text = listing(frames)
    expected = expected_recursion(depth)
    assert python_entries(thread["python"]) == expected, text
    assert thread["holds_gil"] is True
    under = [(f["function"], python_entries(f["python"])) for f in frames if f["python"]]
    assert all(function == EVAL for function, _ in under), text
    if perf:  # every call goes through a trampoline into an eval loop of its own
        assert [entries for _, entries in under] == [[entry] for entry in expected], text
    else:  # one eval loop runs the calls it inlines
        assert [e for _, entries in under for e in entries] == expected, text
    trampolines = [f for f in frames if f["kind"] == "jit"]
    if perf:
        assert [f["function"] for f in trampolines] == [
            f"py::{function}:{RECURSE}" for function, _, _ in expected], text
        for index, frame in enumerate(frames):
            if frame["kind"] == "jit":
                assert frames[index - 1]["function"] == EVAL, text
                assert re.fullmatch(build.static("py_trampoline_evaluator"),
                                    frames[index + 1]["function"]), text
    else:
        assert trampolines == [], text
    check_walk(thread, (build.outermost,))


def activations(thread, build: Build = PLAIN):
    """[(function, trace frame, shim frame, eval frame)] of each JIT activation, after
    checking each is exactly trace, shim, (``build.enters_jit``,) eval loop, the trace
    and the shim named after one function (``build.shared_shim``: trace, the shared
    entry function, eval loop)."""
    frames = thread["frames"]
    text = listing(frames)
    found = []
    for index, frame in enumerate(frames):
        trace = TRACE.match(frame["function"])
        if trace is None:
            shim_of_a_trace = index > 0 and TRACE.match(frames[index - 1]["function"])
            assert (shim_of_a_trace and not build.shared_shim) or frame["kind"] != "jit", \
                text
            continue
        assert frame["kind"] == "jit", text
        if build.shared_shim:
            assert frames[index + 1]["function"] == SHARED_SHIM, text
            assert frames[index + 1]["kind"] == "other", text
            assert frames[index + 2]["function"] == EVAL, text
            found.append((trace.group(1), frame, frames[index + 1], frames[index + 2]))
            continue
        shim = SHIM.match(frames[index + 1]["function"])
        assert shim is not None, text
        assert shim.group(1) == trace.group(1) and shim.group(2) == str(JIT_SCRIPT), text
        loop = index + 2
        if build.enters_jit is not None:
            assert re.fullmatch(build.enters_jit, frames[loop]["function"]), text
            assert frames[loop]["kind"] == "other" and not frames[loop]["python"], text
            loop += 1
        assert frames[loop]["function"] == EVAL, text
        found.append((trace.group(1), frame, frames[index + 1], frames[loop]))
    return found


def check_cpython_jit(document, scenario: str, build: Build = PLAIN) -> None:
    """jit_scenarios.py SCENARIO under PYTHON_JIT=1, run by a ``build`` of CPython."""
    lines = marks(JIT_SCRIPT)
    file = str(JIT_SCRIPT)
    module = (("<module>", file, lines["module"]))
    if scenario == "threads":
        threads = document["threads"]
        assert len(threads) == 3, [listing(t["frames"]) for t in threads]
        spinning = 0
        for thread in threads:
            check_walk(thread, (build.outermost,))
            spinning += [a[0] for a in activations(thread, build)] == ["spin"]
        assert spinning == 2, [listing(t["frames"]) for t in threads]
        return
    thread = main_thread(document)
    check_walk(thread, (build.outermost,))
    found = activations(thread, build)
    text = listing(thread["frames"])
    python = python_entries(thread["python"])
    if scenario == "kill":
        [(name, trace, _shim, loop)] = found
        assert name == "hot", text
        expected = [("leaf", file, lines["leaf-kill"]), ("hot", file, lines["hot"]), module]
        assert python == expected, text
        assert python_entries(trace["python"]) == expected[:2], text
        assert python_entries(loop["python"]) == expected[2:], text
    elif scenario == "branchy":
        # The stop is in a side exit's trace: its return slot is in another
        # executor's shim (the one the eval loop entered).
        [(name, trace, shim, loop)] = found
        assert name == "branchy", text
        if shim is not None:
            executor = int(TRACE.match(trace["function"]).group(4), 16)
            assert not executor <= shim["pc"] < executor + SHIM_BOUND, text
        assert python == [("branchy", file, lines["branchy"]), module], text
        assert python_entries(trace["python"]) == python[:1], text
        assert python_entries(loop["python"]) == python[1:], text
    elif scenario == "nested":
        assert [a[0] for a in found] == ["key", "nested"], text
        assert python == [("key", file, lines["key"]), ("nested", file, lines["nested"]),
                          module], text
        # key's eval loop runs nothing but the trace of key's loop.
        assert [(python_entries(trace["python"]), python_entries(loop["python"]))
                for _, trace, _, loop in found] == [(python[:1], []),
                                                    (python[1:2], python[2:])], text
    elif scenario == "recursion":
        assert found and all(a[0] == "descend" for a in found), text
        assert python == ([("descend", file, lines["descend-kill"])]
                          + [("descend", file, lines["descend"])] * 500
                          + [("recursion", file, lines["recursion"]), module]), text
        # The innermost call's loop is the trace; its callers wait in the eval loop.
        assert python_entries(found[0][1]["python"]) == python[:1], text
    else:
        raise AssertionError(f"no expectation for {scenario!r}")
    # Every Python frame sits under the trace or eval loop that runs it, in order.
    under = [e for f in thread["frames"] for e in python_entries(f["python"])]
    assert under == python, text
    assert all(f["function"] == EVAL or f["kind"] == "jit"
               for f in thread["frames"] if f["python"]), text
