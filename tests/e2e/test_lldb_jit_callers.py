"""Issue 18: the native callers below CPython's JIT frames, as LLDB shows them without
the JIT.  The same script stopped at the same call, JIT on and JIT off: from the eval
loop that runs ``<module>`` (the one that enters the executor when the JIT is on) down to
``_start``, LLDB 23's ``bt`` lists the same functions with the same lines, inlined
frames included (LLDB's "[inlined]" mark is not compared: its own frames show it on some
inlined functions and not on others), live and on LLDB's own core file.  Issue 34: the
frames LLDB makes for tail calls from DWARF's call sites too ("[artificial]":
``run_eval_code_obj`` under ``PyEval_EvalCode``, ``pymain_main`` under ``Py_RunMain``),
with their mark, where the walk found the callers (stack/tail_calls.py) and where it
handed LLDB's frames through.

Not compared: the argument values (a frame the walk found has no registers, so LLDB
shows ``<unavailable>``)."""

import re

import pytest

from tests.driver import driver
from tests.jit_python import JIT_MINORS, jit_python
from tests.python_expect import SCRIPTS

SCRIPT = SCRIPTS / "jit_scenarios.py"
# Two stops in a C function a trace calls: after ``kill``'s trace LLDB's own unwinder
# loses the stack (the walk finds the callers); after raise_in_hot_loop's it does not
# (the walk hands LLDB's frames through).
STOPS = {"kill": [SCRIPT, "kill"], "raise": [SCRIPTS / "raise_in_hot_loop.py"]}
EVAL_LOOP = "_PyEval_EvalFrameDefault"
# "frame #12: 0x... python3.14`run_mod(mod=...) at pythonrun.c:1460:19 [synthetic]"
FRAME = re.compile(r"^\s*\*?\s*frame #\d+: (?:0x[0-9a-f]+ )?(.*)$")
FUNCTION = re.compile(r"^[^`\s]+`([^(\s]+)")
WHERE = re.compile(r" at ([^\s:]+:\d+)(?::\d+)?")


def frames(bt: str):
    """(function, file:line) of every frame of ``bt`` but Python frames; a tail-call
    frame's function with LLDB's " [artificial]" mark."""
    found = []
    for line in bt.splitlines():
        match = FRAME.match(line)
        if match is None or match.group(1).startswith("[py] "):
            continue
        text = match.group(1)
        function = FUNCTION.match(text)
        where = WHERE.findall(text)  # the last: an argument may be a function too
        name = function.group(1) if function else text
        found.append((name + (" [artificial]" if "[artificial]" in text else ""),
                      where[-1] if where else None))
    return found


def below_eval_loop(bt: str):
    """The frames after the last eval loop: the callers of the eval loop that runs the
    script's ``<module>``."""
    listed = frames(bt)
    names = [name for name, _ in listed]
    assert EVAL_LOOP in names, bt
    return listed[len(names) - names[::-1].index(EVAL_LOOP):]


def stop(minor: str, tmp_path, jit: bool, scenario: str = "kill"):
    """LLDB 23's bt of ``scenario`` at its SIGTRAP: live and on its core."""
    core = tmp_path / f"jit{int(jit)}.dmp"
    program = [jit_python(minor), *STOPS[scenario]]
    lldb = driver("lldb23")
    live = lldb.launch(program, ["bt"], env={"PYTHON_JIT": "1" if jit else "0"},
                       core=core)
    return live.output("bt"), lldb.open_core(program, core, ["bt"]).output("bt")


@pytest.mark.parametrize("scenario", STOPS)
@pytest.mark.parametrize("minor", JIT_MINORS)
def test_callers_below_jit_frames_as_without_jit(minor, scenario, tmp_path):
    on_live, on_core = stop(minor, tmp_path, True, scenario)
    off_live, _ = stop(minor, tmp_path, False, scenario)
    assert "[jit" in on_live and "[jit" in on_core, on_live + on_core
    expected = below_eval_loop(off_live)
    assert [name for name, _ in expected][-1] == "_start", off_live
    assert "Py_BytesMain" in [name for name, _ in expected], off_live
    # the program's own tail calls (3.14 has two, 3.13 one)
    assert "pymain_main [artificial]" in [name for name, _ in expected], off_live
    for bt in (on_live, on_core):
        assert below_eval_loop(bt) == expected, f"JIT on:\n{bt}\nJIT off:\n{off_live}"


# "#13  pymain_run_file_obj at /opt/.../Modules/main.c:410"
MIXED_FRAME = re.compile(r"^#\d+\s+(\S+)(?: at (\S+))?$")


def mixed_frames(text: str):
    """(function, file name:line) of py-mixed-bt's native frames."""
    found = []
    for line in text.splitlines():
        match = MIXED_FRAME.match(line.strip())
        if match:
            where = match.group(2)
            found.append((match.group(1), where.rsplit("/", 1)[-1] if where else None))
    return found


def after_eval_loop(listed):
    names = [name for name, _ in listed]
    assert EVAL_LOOP in names, listed
    return listed[len(names) - names[::-1].index(EVAL_LOOP):]


@pytest.mark.parametrize("minor", JIT_MINORS)
def test_lldb19_py_mixed_bt_reaches_main_below_jit_frames(minor, tmp_path):
    """lldb-19 has no frame providers: its own ``bt`` may stop in JIT code; py-mixed-bt
    lists the callers it lists with the JIT off (its tail-call frames included), to
    ``_start``, live and on its core."""
    lldb = driver("lldb19")
    program = [jit_python(minor), SCRIPT, "kill"]
    off = lldb.launch(program, ["py-mixed-bt"], env={"PYTHON_JIT": "0"})
    expected = after_eval_loop(mixed_frames(off.output("py-mixed-bt")))
    names = [name for name, _ in expected]
    assert names[-1] == "_start" and "Py_BytesMain" in names, off.whole
    assert "pymain_main" in names, off.whole  # a tail call's frame (LLDB's [artificial])
    core = tmp_path / "jit1.dmp"
    live = lldb.launch(program, ["py-mixed-bt", "jit-regions", "bt"],
                       env={"PYTHON_JIT": "1"}, core=core)
    # lldb-19's own bt names the trace (then goes on with LLDB's guesses: the symbol
    # file has no .eh_frame for a trace, as docs/guide.md says).
    assert re.search(r"frame #\d+: 0x[0-9a-f]+ \[jit\] hot \(", live.output("bt")), live.whole
    from_core = lldb.open_core(program, core, ["py-mixed-bt"])
    for text in (live.output("py-mixed-bt"), from_core.output("py-mixed-bt")):
        assert "[jit" in text and "backtrace stopped" not in text, text
        assert after_eval_loop(mixed_frames(text)) == expected, \
            f"JIT on:\n{text}\nJIT off:\n{off.whole}"
