"""The corrupted core files of test_corrupted_cores.py under real LLDB 23.

Same cores (gcore of the toy JIT in its three modes, CPython 3.12 ``-X perf``, 3.13's
and 3.14's JIT) with the same damage; the baseline is LLDB's own unwind of the same
thread, ``bt --provider 0`` after ``jit-unwind symbol-file off`` (no module of ours gives LLDB's
unwinder rules for JIT code then).  With the plugin nothing prints a traceback, ``bt`` keeps
LLDB's frames up to and including its first one without a name (where LLDB meets JIT
code or a scribbled return address), a walk that went past LLDB's own says why it ended
where it did not reach an outermost function, and ``py-mixed-bt`` (text and JSON) stays
usable on CPython.
"""

import json
import re
from typing import List

import jsonschema
import pytest

from tests.e2e.test_corrupted_cores import (SCHEMA, SUBJECTS, scramble_jit_code, scribble,
                                            subjects, truncate)
from tests.lldb_driver import WAIT_FOR_PROVIDER, LldbFrame, parse_lldb_backtrace, run_lldb
from tests.support import assert_no_python_failure

__all__ = ["subjects"]  # the module's fixture, shared

# Where a thread's stack legitimately ends.
OUTERMOST = {"main", "_start", "clone", "clone3", "__libc_start_main_impl",
             "__libc_start_call_main", "start_thread", "__libc_start_main"}
_ADDRESS = re.compile(r"frame #\d+: (0x[0-9a-f]+)")
STOPPED = "[unwind stopped: "


def _between(output: str, command: str, following: str) -> str:
    return output.split(f"(lldb) {command}\n", 1)[1].split(f"(lldb) {following}", 1)[0]


def _address(frame: LldbFrame):
    match = _ADDRESS.search(frame.line)
    return match.group(1) if match else None


def _nameless(frame: LldbFrame) -> bool:
    return frame.function in ("??", "") or _address(frame) is None


def assert_lldb_no_worse(plain: List[LldbFrame], ours: List[LldbFrame], output: str) -> None:
    """LLDB's own frames up to and including its first nameless one are ours too: same
    level, pc and function (a nameless frame may have gained a name)."""
    first = next((i for i, f in enumerate(plain) if _nameless(f)), len(plain) - 1)
    # Python frames the plugin interleaves ("[py] ...", no pc) are no native frames.
    ours = [f for f in ours if not f.function.startswith("[py] ")]
    assert len(ours) >= first + 1, output
    for theirs, mine in zip(plain[:first + 1], ours):
        assert _address(mine) == _address(theirs), output
        if not _nameless(theirs):
            assert mine.function == theirs.function, output


def assert_lldb_says_why(plain: List[LldbFrame], ours: List[LldbFrame], output: str) -> None:
    """A walk whose last frame the plugin found (``[synthetic]``) ends at an outermost
    function or says why it stopped; where the last frame is LLDB's own, LLDB ended
    the walk as it does without the plugin (silently)."""
    last = ours[-1]
    if "[synthetic]" not in last.line and STOPPED not in last.line:
        return
    assert (last.function in OUTERMOST or STOPPED in last.line
            or (_address(last) or "").strip("0x") == ""), output


def check_lldb_core(program, core, python: bool) -> str:
    commands = [WAIT_FOR_PROVIDER, "bt", "jit-unwind symbol-file off", "bt --provider 0",
                "image list", "jit-regions"]
    if python:
        commands += ["py-mixed-bt", "py-mixed-bt --json", "script print('@@end')"]
    output = run_lldb(commands, [program], core=core)
    assert_no_python_failure(output)
    ours = parse_lldb_backtrace(_between(output, "bt", "jit-unwind symbol-file off"))
    # The baseline is LLDB's own unwind, `bt --provider 0` in the same session once our
    # module is removed, so that it gives LLDB's unwinder no rules for JIT code (checked;
    # a second LLDB session without the plugin for the baseline hung now and then on a
    # truncated core, LLDB's own doing).
    assert ".elf" not in _between(output, "image list", "jit-regions"), output
    plain = parse_lldb_backtrace(_between(output, "bt --provider 0", "image list"))
    if not plain:
        assert not ours, output
        return output
    assert_lldb_no_worse(plain, ours, output)
    assert_lldb_says_why(plain, ours, output)
    if python:
        text = _between(output, "py-mixed-bt", "py-mixed-bt --json")
        assert text.strip(), output
        document = _between(output, "py-mixed-bt --json", "script")
        if document.strip().startswith("{"):
            jsonschema.validate(json.loads(document), SCHEMA)
        else:  # the command refused, with a one-line reason
            assert "py-mixed-bt: " in document and len(document.strip().splitlines()) == 1, \
                output
    return output


@pytest.mark.parametrize("where", ["jit-return", "jit-caller", "random"])
@pytest.mark.parametrize("name", list(SUBJECTS))
def test_scribbled_stack_lldb(subjects, tmp_path, name, where):
    subject = subjects(name)
    check_lldb_core(subject.program, scribble(subject, tmp_path / f"{where}.core", where),
                    subject.python)


@pytest.mark.parametrize("name", ["toy-mixed", "py3.12-perf", "py3.13-jit"])
def test_scrambled_jit_code_lldb(subjects, tmp_path, name):
    subject = subjects(name)
    check_lldb_core(subject.program, scramble_jit_code(subject, tmp_path / "code.core"),
                    subject.python)


@pytest.mark.parametrize("how", ["in-stack", "no-registers"])
@pytest.mark.parametrize("name", ["toy-mixed", "py3.12-perf"])
def test_truncated_core_lldb(subjects, tmp_path, name, how):
    subject = subjects(name)
    check_lldb_core(subject.program, truncate(subject, tmp_path / f"{how}.core", how),
                    subject.python)
