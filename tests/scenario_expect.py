"""What a correct ``py-mixed-bt --json --all-threads`` document of each end-to-end
scenario holds, whichever debugger printed it (tests/e2e/test_scenarios.py).

Every check reads the document only: frames by kind, name and pc, Python frames by
function, file and line, both per thread and under the native frame that runs them.
"""

import re
from typing import List, Tuple

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
    reaches one of ``outermost`` (or a thread's first frame)."""
    frames = thread["frames"]
    text = listing(frames)
    assert thread["stop_reason"] is None, text
    for frame in frames:
        assert frame["function"] and not frame["function"].startswith("??"), text
        assert not frame["guess"] and frame["stop_reason"] is None, text
    assert frames[-1]["function"] in (*outermost, "clone3", "clone"), text


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


def check_recursion(document, depth: int, perf: bool) -> None:
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
                assert frames[index + 1]["function"] == "py_trampoline_evaluator", text
    else:
        assert trampolines == [], text
    check_walk(thread)


def activations(thread, shim=True):
    """[(function, trace frame, shim frame, eval frame)] of each JIT activation, after
    checking each is exactly trace, shim, eval loop, named after one function.
    ``shim`` False (3.15): trace, eval loop; the shim frame is None.  3.15 enters every
    trace through _PyJIT_Entry, a function of the interpreter, and the debugger unwinds
    the trace by the CFI CPython registers with it, which returns to the eval loop."""
    frames = thread["frames"]
    text = listing(frames)
    found = []
    for index, frame in enumerate(frames):
        trace = TRACE.match(frame["function"])
        if trace is None:
            shim_of_a_trace = index > 0 and TRACE.match(frames[index - 1]["function"])
            assert (shim and shim_of_a_trace) or frame["kind"] != "jit", text
            continue
        assert frame["kind"] == "jit", text
        shim_frame = frames[index + 1] if shim else None
        if shim:
            named = SHIM.match(shim_frame["function"])
            assert named is not None, text
            assert named.group(1) == trace.group(1) and named.group(2) == str(JIT_SCRIPT), \
                text
        assert frames[index + 1 + shim]["function"] == EVAL, text
        found.append((trace.group(1), frame, shim_frame, frames[index + 1 + shim]))
    return found


def check_cpython_jit(document, scenario: str, shim: bool = True) -> None:
    """jit_scenarios.py SCENARIO under PYTHON_JIT=1; ``shim`` False for 3.15 (see
    activations)."""
    lines = marks(JIT_SCRIPT)
    file = str(JIT_SCRIPT)
    module = (("<module>", file, lines["module"]))
    if scenario == "threads":
        threads = document["threads"]
        assert len(threads) == 3, [listing(t["frames"]) for t in threads]
        spinning = 0
        for thread in threads:
            check_walk(thread)
            spinning += [a[0] for a in activations(thread, shim)] == ["spin"]
        assert spinning == 2, [listing(t["frames"]) for t in threads]
        return
    thread = main_thread(document)
    check_walk(thread)
    found = activations(thread, shim)
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
        [(name, trace, shim_frame, _loop)] = found
        assert name == "branchy", text
        if shim_frame is not None:
            executor = int(TRACE.match(trace["function"]).group(4), 16)
            assert not executor <= shim_frame["pc"] < executor + SHIM_BOUND, text
        assert python == [("branchy", file, lines["branchy"]), module], text
    elif scenario == "nested":
        assert [a[0] for a in found] == ["key", "nested"], text
        assert python == [("key", file, lines["key"]), ("nested", file, lines["nested"]),
                          module], text
    elif scenario == "recursion":
        assert found and all(a[0] == "descend" for a in found), text
        assert python == ([("descend", file, lines["descend-kill"])]
                          + [("descend", file, lines["descend"])] * 500
                          + [("recursion", file, lines["recursion"]), module]), text
    else:
        raise AssertionError(f"no expectation for {scenario!r}")
    # Every Python frame sits under the trace or eval loop that runs it, in order.
    under = [e for f in thread["frames"] for e in python_entries(f["python"])]
    assert under == python, text
    assert all(f["function"] == EVAL or f["kind"] == "jit"
               for f in thread["frames"] if f["python"]), text
