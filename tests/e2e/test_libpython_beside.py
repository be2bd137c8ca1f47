"""CPython's own GDB commands (python-gdb.py: py-bt, py-up, py-down, py-list, py-locals)
with jit-unwind loaded beside them, on a JIT stack: live and on its core, GDB 13 and 18,
CPython 3.13, 3.14 and 3.15.  They must show at least what they show without the
plugin.

The case that broke: the JIT trace pushes frames of its own (leaf() inlined into hot()'s
trace), while the eval loop under it still holds the frame it entered the trace with.
Without the plugin GDB cannot walk through JIT code and py-bt reads the thread state;
with the plugin's walk py-bt found that eval loop and lost leaf()."""

import re

import pytest

from tests.jit_python import JIT_MINORS, binary_name, jit_python
from tests.python_expect import SCRIPTS, marks
from tests.support import run_gdb

SCRIPT = SCRIPTS / "jit_scenarios.py"
COMMANDS = ("py-bt", "py-up", "py-list", "py-locals", "py-up", "py-down")
# One output per command, told apart by a line echoed between them.
SEPARATOR = "=====command"
PY_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (\S+)$', re.MULTILINE)


@pytest.fixture(params=[*JIT_MINORS, "3.15-jit"])
def minor(request):
    return request.param


def _libpython(minor):
    path = jit_python(minor).parent / f"{binary_name(minor)}-gdb.py"
    assert path.exists(), f"{path} is missing from the interpreter's archive"
    return path


def _shown(output):
    """[(command, its output)], in the order of COMMANDS."""
    parts = output.split(SEPARATOR)[1:-1]  # the last one closes the last output
    assert len(parts) == len(COMMANDS), output
    return list(zip(COMMANDS, (part.strip() for part in parts)))


def _commands():
    shown = []
    for command in COMMANDS:
        shown += [f"echo {SEPARATOR}\\n", command]
    return [*shown, f"echo {SEPARATOR}\\n"]


def _runs(gdb, tmp_path, minor, plugin, scenario):
    """The commands' outputs live and on the core ([(command, text)] each), and the
    Python errors of both runs."""
    python, core = jit_python(minor), tmp_path / f"plugin{int(plugin)}.core"
    early = [f"source {_libpython(minor)}", "set print frame-arguments none"]
    live = run_gdb(gdb, ["set environment PYTHON_JIT=1", "run", *_commands(),
                         "frame 0", f"gcore {core}"],
                   [python, SCRIPT, scenario], plugin=plugin, early=early,
                   others_may_fail=True)  # py-bt's own "Traceback" header
    assert core.exists(), live
    from_core = run_gdb(gdb, _commands(), [python], core=core, plugin=plugin, early=early,
                        others_may_fail=True)
    return (_shown(live.partition("SIGTRAP")[2]), _shown(from_core)), \
        _errors(live) | _errors(from_core)


def _errors(text):
    """The Python errors a command's output reports, addresses left out."""
    return {re.sub(r"0x[0-9a-f]+", "0x…", line.strip()) for line in text.splitlines()
            if "Python Exception" in line}


def _facts(text):
    """What a command's output tells: the Python frames it lists, the source lines and
    locals it shows (lines, without the ones naming an error)."""
    return {line.strip() for line in text.splitlines()
            if line.strip() and "unable" not in line.lower()
            and "Python Exception" not in line and "Error occurred" not in line}


# scenario -> the Python frames 3.14's py-bt lists, by MARK; the one py-list shows.
EXPECTED = {
    # leaf() inlined into hot()'s trace: the trace pushed a frame of its own.
    "kill": (("leaf-kill", "leaf"), ("hot", "hot"), ("module", "<module>")),
    # The trace runs branchy() alone: the eval loop's frame is the running one.
    "branchy": (("branchy", "branchy"), ("module", "<module>")),
}


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_python_gdb_commands_show_at_least_what_they_show_alone(gdb, tmp_path, minor,
                                                                 scenario):
    without, errors_alone = _runs(gdb, tmp_path, minor, False, scenario)
    with_plugin, errors_beside = _runs(gdb, tmp_path, minor, True, scenario)
    # No error of ours, nor one of python-gdb.py's that it does not have alone.
    assert errors_beside <= errors_alone, errors_beside
    for alone, beside in zip(without, with_plugin):
        for (command, text_alone), (_, text_beside) in zip(alone, beside):
            missing = _facts(text_alone) - _facts(text_beside)
            assert not missing, (command, text_alone, text_beside)
            assert _errors(text_beside) <= _errors(text_alone), (command, text_beside)
    if minor != "3.14":
        return  # 3.13's py-bt reads only the eval loop's frame, optimized out there
    lines = marks(SCRIPT)
    expected = [(str(SCRIPT), str(lines[mark]), name) for mark, name in EXPECTED[scenario]]
    for shown in with_plugin:  # live, then core
        output = dict(shown)
        assert PY_FRAME.findall(output["py-bt"]) == expected, output["py-bt"]
        if scenario == "branchy":  # the eval loop's frame is kept: py-list reads it
            assert re.search(rf"^ >{lines['branchy']}\s", output["py-list"], re.M), output
