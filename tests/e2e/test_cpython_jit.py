"""CPython 3.13's and 3.14's JIT under GDB 13 and 18: executors unwound, named, and
their Python frames shown; live and from a core.

The two differ where it matters: 3.13's entry shim pushes rbp and the other
callee-saved registers; 3.14's pushes rbx and r12-r15 only, and its traces use rbp as a
general register, so the eval loop's rbp comes from the eval loop's own prologue."""

import re

import pytest

from tests.jit_python import JIT_MINORS, jit_python
from tests.python_expect import SCRIPTS, marks, python_frames_with_parents
from tests.support import assert_no_unnamed_frames, parse_backtrace, run_gdb

SCRIPT = SCRIPTS / "jit_scenarios.py"
JIT_ON = "set environment PYTHON_JIT=1"
EVAL = "_PyEval_EvalFrameDefault"
TRACE = re.compile(r"^\[jit\] (\S+) \((.+):(\d+)\) trace 0x[0-9a-f]+$")
SHIM = re.compile(r"^\[jit shim\] (\S+) \((.+):(\d+)\)$")
# An entry shim is a few dozen bytes at the start of its executor's mapping.
SHIM_BOUND = 0x100


@pytest.fixture(params=JIT_MINORS)
def minor(request):
    """Each test runs on every CPython with a JIT build: 3.13 and 3.14."""
    return request.param


def _jit_activations(frames, output):
    """[(function of the trace, index of its frame)] after checking each JIT activation
    is exactly trace, shim, eval loop, with trace and shim named after one function."""
    activations = []
    for index, frame in enumerate(frames):
        trace = TRACE.match(frame.function)
        if trace is None:
            shim_of_a_trace = index > 0 and TRACE.match(frames[index - 1].function)
            assert shim_of_a_trace or not frame.function.startswith("[jit"), output
            continue
        shim = SHIM.match(frames[index + 1].function)
        assert shim is not None, output
        assert shim.group(1) == trace.group(1) and shim.group(2) == str(SCRIPT), output
        assert frames[index + 2].function == EVAL, output
        activations.append((trace.group(1), index))
    return activations


def _check_walk(frames, output):
    """No unnamed frame, no guess, and the walk reaches the thread's first frame."""
    assert_no_unnamed_frames(frames)
    names = [f.function for f in frames]
    assert "Py_BytesMain" in names or names[-1] in ("clone3", "clone"), output
    assert "guess" not in output, output


def _live_and_core(gdb, tmp_path, minor, scenario, commands=("run",), show=("bt",)):
    """Output of the ``show`` commands on the live process and on its core file."""
    python = jit_python(minor)
    core = tmp_path / "jit.core"
    live = run_gdb(gdb, [JIT_ON, *commands, *show, f"gcore {core}"],
                   [python, SCRIPT, scenario])
    assert core.exists(), live
    return live, run_gdb(gdb, list(show), [python], core=core)


def _python_under(output, parent_pattern):
    """Python frames (function, line) listed under native frames matching a pattern."""
    return [(entry[0], entry[2]) for entry, parent in python_frames_with_parents(output)
            if re.match(parent_pattern, parent or "")]


def test_kill_from_a_trace(gdb, tmp_path, minor):
    lines = marks(SCRIPT)
    live, from_core = _live_and_core(gdb, tmp_path, minor, "kill",
                                     show=("bt", "info jit-regions --source cpython-jit",
                                           "py-mixed-bt"))
    for text in (live, from_core):
        output, _, mixed = text.partition('"MainThread"')  # bt + info jit-regions, py-mixed-bt
        # info jit-regions lists each executor's shim and trace with its function.
        assert re.search(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+0x[0-9a-f]{2}\s+cpython-jit\s+"
                         rf"\[jit shim\] hot \({re.escape(str(SCRIPT))}:\d+\)$", output,
                         re.M), output
        frames = parse_backtrace(output)
        _check_walk(frames, output)
        assert _jit_activations(frames, output) == [("hot", _index(frames, "[jit] hot"))]
        assert frames[_index(frames, "[jit] hot") - 1].function == "os_kill"  # called by JIT code
        everything = [(e[0], e[2]) for e, _ in python_frames_with_parents(output)]
        assert everything == [("leaf", lines["leaf-kill"]), ("hot", lines["hot"]),
                              ("<module>", lines["module"])], output
        assert _python_under(output, r"\[jit\]") == everything[:2], output
        # py-mixed-bt puts them in the same places.
        under = [(e[0], e[2], parent) for e, parent in python_frames_with_parents(mixed, True)]
        assert under == [("leaf", lines["leaf-kill"], "[jit]"), ("hot", lines["hot"], "[jit]"),
                         ("<module>", lines["module"], EVAL)], mixed


def _index(frames, prefix):
    return next(i for i, f in enumerate(frames) if f.function.startswith(prefix))


def test_side_exits_between_executors(gdb, tmp_path, minor):
    """The stop is in a side exit's trace: its return slot is in another executor's
    shim (the one the eval loop entered)."""
    for output in _live_and_core(gdb, tmp_path, minor, "branchy"):
        frames = parse_backtrace(output)
        _check_walk(frames, output)
        [(name, index)] = _jit_activations(frames, output)
        assert name == "branchy"
        trace_executor = int(re.search(r"trace (0x[0-9a-f]+)", frames[index].function)[1], 16)
        shim_pc = int(re.search(r"^#\d+\s+(0x[0-9a-f]+)", frames[index + 1].line)[1], 16)
        assert not trace_executor <= shim_pc < trace_executor + SHIM_BOUND, output


def test_jit_c_python_jit_nesting(gdb, tmp_path, minor):
    lines = marks(SCRIPT)
    for output in _live_and_core(gdb, tmp_path, minor, "nested"):
        frames = parse_backtrace(output)
        _check_walk(frames, output)
        assert [name for name, _ in _jit_activations(frames, output)] == ["key", "nested"]
        everything = [(e[0], e[2]) for e, _ in python_frames_with_parents(output)]
        assert everything == [("key", lines["key"]), ("nested", lines["nested"]),
                              ("<module>", lines["module"])], output


def test_two_threads_in_jit_code(gdb, tmp_path, minor):
    for output in _live_and_core(gdb, tmp_path, minor, "threads",
                                 show=("thread apply all bt",)):
        per_thread = re.split(r"^Thread \d+ \(Thread ", output, flags=re.M)[1:]
        assert len(per_thread) == 3, output
        spinning = 0
        for text in per_thread:
            frames = parse_backtrace(text)
            _check_walk(frames, text)
            activations = _jit_activations(frames, text)
            spinning += [name for name, _ in activations] == ["spin"]
        assert spinning == 2, output


def test_deep_recursion_through_jit_code(gdb, tmp_path, minor):
    lines = marks(SCRIPT)
    for output in _live_and_core(gdb, tmp_path, minor, "recursion"):
        frames = parse_backtrace(output)
        _check_walk(frames, output)
        assert all(name == "descend" for name, _ in _jit_activations(frames, output))
        python = [(e[0], e[2]) for e, _ in python_frames_with_parents(output)]
        assert python[0] == ("descend", lines["descend-kill"]), output
        assert python[1:501] == [("descend", lines["descend"])] * 500, output
        assert python[501:] == [("recursion", lines["recursion"]),
                                ("<module>", lines["module"])], output


REGISTERS = ("rbx", "rbp", "rsp", "r12", "r13", "r14", "r15")


def _registers(output, marker):
    """{register: value, or None when <not saved>} as listed after ``marker``."""
    block = output.split(marker, 1)[1]
    listed = re.findall(r"^(rbx|rbp|rsp|r12|r13|r14|r15)\s+(0x[0-9a-f]+|<not saved>)",
                        block, re.M)[:len(REGISTERS)]
    return {name: None if value == "<not saved>" else int(value, 16)
            for name, value in listed}


def test_eval_loop_registers_match_the_return_from_jit_code(gdb, minor):
    """The eval loop's callee-saved registers as recovered across the JIT frames equal
    the ones it has when the shim returns to it: the ground truth.  The one exception is
    the eval loop's copy of the interpreter frame it entered the trace for (dead while
    the trace runs, which has pushed leaf()'s frame on it): reported unknown."""
    python = jit_python(minor)
    first = run_gdb(gdb, [JIT_ON, "run", "bt"], [python, SCRIPT, "kill"])
    frames = parse_backtrace(first)
    eval_level = frames[_index(frames, "[jit shim]") + 1].level
    regs = "info registers " + " ".join(REGISTERS)
    output = run_gdb(gdb, [
        JIT_ON, "run", "echo ENTERED-FOR ",
        "output/x ((PyThreadState *) _Py_tss_tstate)->current_frame->previous", "echo \\n",
        f"frame {eval_level}", "echo RECOVERED\\n", regs,
        "python gdb.execute('tbreak *%d' % gdb.selected_frame().pc())", "continue",
        "echo RETURNED\\n", regs], [python, SCRIPT, "kill"])
    entered_for = int(re.search(r"^ENTERED-FOR ?(0x[0-9a-f]+)$", output, re.M).group(1), 16)
    recovered = _registers(output.split("RETURNED\n")[0], "RECOVERED\n")
    returned = _registers(output, "RETURNED\n")
    assert sorted(recovered) == sorted(returned) == sorted(REGISTERS), output
    assert None not in returned.values(), output
    unknown = [name for name, value in recovered.items() if value is None]
    assert len(unknown) <= 1, output
    for name in REGISTERS:
        expected = None if returned[name] == entered_for else returned[name]
        assert recovered[name] == expected, (name, output)


def test_the_issue_scenario_break_on_os_getpid(gdb, tmp_path, minor):
    """break os_getpid, ignore 200000 hits, continue: GDB used to print 14 garbage
    frames after PyObject_Vectorcall (3.13), or stop with a Python exception (3.14).
    The same on a core made at that breakpoint."""
    lines = marks(SCRIPT)
    live, from_core = _live_and_core(
        gdb, tmp_path, minor, "getpid",
        commands=("break os_getpid", "run", "ignore 1 200000", "continue"),
        show=("bt", "py-mixed-bt"))
    for output in (live, from_core):
        output, _, mixed = output.partition('"MainThread"')
        frames = parse_backtrace(output)
        _check_walk(frames, output)
        # On a core GDB 18 also shows the inlined os_getpid_impl the breakpoint sits in.
        names = [f.function for f in frames]
        assert names[:1] == ["os_getpid"] or names[:2] == ["os_getpid_impl", "os_getpid"]
        assert [name for name, _ in _jit_activations(frames, output)] == ["hot"]
        assert "_PyRuntime" not in [f.function for f in frames]
        everything = [(e[0], e[2]) for e, _ in python_frames_with_parents(output)]
        assert everything == [("leaf", lines["leaf"]), ("hot", lines["hot"]),
                              ("<module>", lines["module"])], output
        assert _python_under(output, r"\[jit\]") == everything[:2], output
        under = [(e[0], e[2], parent)
                 for e, parent in python_frames_with_parents(mixed, True)]
        assert under == [("leaf", lines["leaf"], "[jit]"), ("hot", lines["hot"], "[jit]"),
                         ("<module>", lines["module"], EVAL)], mixed


@pytest.mark.parametrize("scenario", ["kill", "nested"])
def test_jit_off_is_left_alone(gdb, minor, scenario):
    """PYTHON_JIT=0: the plugin changes no native frame (it only adds Python frames)."""
    program = [jit_python(minor), SCRIPT, scenario]
    commands = ["set environment PYTHON_JIT=0", "run", "bt"]
    with_plugin = run_gdb(gdb, commands, program)
    without = run_gdb(gdb, commands, program, plugin=False)
    assert "[jit" not in with_plugin
    # The same frames at the same places (argument values vary from run to run).
    native = lambda text: [(line.split(" (")[0].split(" in ")[-1], line.rpartition(" at ")[2])
                           for line in text.splitlines() if line.startswith("#")]
    assert native(with_plugin) == native(without) != []


# -- CPython 3.15: traces registered through GDB's JIT interface ---------------------

def _native_pcs(text):
    """The pcs of the native frames of a bt, in order."""
    return [int(m.group(1), 16) for m in
            re.finditer(r"^#\d+\s+(0x[0-9a-f]+) in ", text, re.M)]


def test_315_executors_named_and_their_python_frames_under_them(gdb, tmp_path):
    """3.15 registers each executor with GDB's JIT interface as ``py::jit:executor``
    and GDB unwinds it by CPython's CFI.  With the plugin the trace frame is named after
    its function, leaf and hot sit under it, info jit-regions lists the executors as
    CPython's, and GDB's own frames are all there (same pcs as without the plugin)."""
    lines = marks(SCRIPT)
    python = jit_python("3.15-jit")
    core = tmp_path / "jit.core"
    scenario, stop = "kill", ("run",)
    show = ("bt", "info jit-regions", "py-mixed-bt")
    live = run_gdb(gdb, [JIT_ON, *stop, *show, f"gcore {core}"], [python, SCRIPT, scenario])
    alone = run_gdb(gdb, [JIT_ON, *stop, "bt"], [python, SCRIPT, scenario], plugin=False)
    from_core = run_gdb(gdb, list(show), [python], core=core)
    leaf = lines["leaf-kill"]
    for output in (live, from_core):
        output, _, mixed = output.partition('"MainThread"')
        frames = parse_backtrace(output)
        _check_walk(frames, output)
        assert "py::jit:executor" not in [f.function for f in frames], output
        traces = [i for i, f in enumerate(frames) if TRACE.match(f.function)]
        assert len(traces) == 1 and TRACE.match(frames[traces[0]].function).group(1) == "hot"
        # CPython's CFI returns from the trace to the eval loop, past the function that
        # called it: the plugin unwinds the trace into _PyJIT_Entry.
        assert frames[traces[0] + 1].function == "_PyJIT_Entry", output
        assert frames[traces[0] + 2].function == EVAL, output
        everything = [(e[0], e[2]) for e, _ in python_frames_with_parents(output)]
        assert everything == [("leaf", leaf), ("hot", lines["hot"]),
                              ("<module>", lines["module"])], output
        assert _python_under(output, r"\[jit\]") == everything[:2], output
        under = [(e[0], e[2], parent) for e, parent in python_frames_with_parents(mixed, True)]
        assert under == [("leaf", leaf, "[jit]"), ("hot", lines["hot"], "[jit]"),
                         ("<module>", lines["module"], EVAL)], mixed
        # info jit-regions: the executor of hot as CPython's, beside GDB's entry.
        trace_start = re.search(r"trace (0x[0-9a-f]+)", frames[traces[0]].function)[1]
        assert re.search(rf"^{trace_start}\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+cpython-jit\s+"
                         rf"\[jit\] hot \({re.escape(str(SCRIPT))}:\d+\) trace {trace_start}$",
                         output, re.M), output
        assert re.search(rf"^{trace_start}\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+gdb-jit\s+"
                         r"py::jit:executor$", output, re.M), output
    # Never fewer frames than GDB alone: its native frames at the same pcs, and the one
    # it skipped (_PyJIT_Entry's) between the trace and the eval loop.
    assert "py::jit:executor" in alone and "_PyJIT_Entry" not in alone
    ours = live.partition("info jit-regions")[0].partition('"MainThread"')[0]
    [entry] = re.findall(r"^#\d+\s+(0x[0-9a-f]+) in _PyJIT_Entry ", ours, re.M)
    pcs = _native_pcs(ours)
    assert pcs.count(int(entry, 16)) == 1, ours
    pcs.remove(int(entry, 16))
    assert pcs == _native_pcs(alone), (ours, alone)
    # The eval loop above it gets the registers _PyJIT_Entry saved, not the trace's:
    # its tstate is the thread state (GDB alone showed whatever the trace left there).
    assert re.search(r"_PyEval_EvalFrameDefault \(tstate=(0x[0-9a-f]+ <_PyRuntime\+\d+>|"
                     r"<optimized out>)", live), live
