"""``jit-unwind core FILE.dmp``: Linux minidumps, read with no debugger and through LLDB,
against the ELF core of the same stop.

The same stop: the program stops itself with SIGSTOP where it would trap
(``stop_instead_of_trap.py``, the toy JIT's ``sigstop``); GDB 13 writes its gcore and
detaches, the process still stopped; then LLDB 23 attaches and writes a minidump in each
style it has (``process save-core --plugin-name=minidump --style full``,
``modified-memory``, ``stack``).  Where the dump holds the memory the walk reads, every
thread's frames are the core's (the core read by the same reader: GDB and LLDB name
inlined frames differently); where it does not, each frame or thread says what is
missing: the JIT code LLDB's modified-memory style leaves out makes the frames after
it guesses, marked; a stack-only dump holds no interpreter state, and each thread says
so instead of a Python stack."""

import json
import subprocess

import pytest

from tests.e2e.test_attach_no_debugger import gcore, self_stopped, thread_states
from tests.e2e.test_cli import jit_unwind
from tests.jit_python import fixture_python
from tests.lldb_driver import VENV_PYTHON, lldb_server
from tests.python_expect import SCRIPTS

STOP_INSTEAD_OF_TRAP = SCRIPTS / "stop_instead_of_trap.py"
STYLES = ("full", "modified-memory", "stack")
LLDB = VENV_PYTHON.parent / "lldb"


def one_stop(argv, directory, env=None):
    """(pid, the gcore, LLDB's minidumps (style -> path)) of one stop of ``argv``,
    yielded while its perf map is still there (the process is killed after)."""
    directory.mkdir()
    core = directory / "stop.core"
    dumps = {style: directory / f"{style}.dmp" for style in STYLES}
    with self_stopped(argv, env) as process:
        gcore(process.pid, core)
        assert set(thread_states(process.pid)) == {"T"}
        commands = [f"process attach -p {process.pid}"]
        commands += [f"process save-core --plugin-name=minidump --style {style} {path}"
                     for style, path in dumps.items()]
        argv = [str(LLDB), "--batch", "--no-lldbinit"]
        for command in commands:
            argv += ["-o", command]
        result = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                timeout=300, stdin=subprocess.DEVNULL,
                                env={"LLDB_DEBUGSERVER_PATH": lldb_server(),
                                     "PATH": "/usr/bin:/bin"})
        assert all(path.exists() for path in dumps.values()), result.stdout + result.stderr
        yield process.pid, core, dumps


def read(path, debugger="none", status=0):
    """The JSON document and the text ``jit-unwind core`` prints for ``path``."""
    printed = []
    for form in (["--json"], []):
        result = jit_unwind("core", "--debugger", debugger, *form, path)
        assert result.returncode == status, result
        assert "Traceback" not in result.stderr, result.stderr
        printed.append(result.stdout)
    return json.loads(printed[0]), printed[1]


def by_lwp(document):
    return {thread["lwp"]: thread for thread in document["threads"]}


def assert_same_threads(dump, core, text):
    """Every thread of the core in the dump, with the same frames and Python stack."""
    dumped, cored = by_lwp(dump), by_lwp(core)
    assert set(dumped) == set(cored), text
    for lwp, thread in cored.items():
        assert dumped[lwp]["frames"] == thread["frames"], (lwp, text)
        assert dumped[lwp]["python"] == thread["python"], (lwp, text)


def assert_says_jit_code_is_missing(dump, dump_path):
    note = dump.get("runtime_note") or ""
    assert f"the minidump {dump_path} does not hold the code of " in note, dump
    assert "--style full" in note, note


def assert_guesses_only_after_missing_jit_code(dump, core, text, dump_path):
    """The frames are the core's, names and Python frames; the frames the dump differs
    in are JIT frames whose code it lacks, or the caller found past one, marked as
    guesses; the note says why."""
    assert_says_jit_code_is_missing(dump, dump_path)
    dumped, cored = by_lwp(dump), by_lwp(core)
    assert set(dumped) == set(cored), text
    for lwp, thread in cored.items():
        frames = dumped[lwp]["frames"]
        assert [(f["function"], f["python"]) for f in frames] == \
            [(f["function"], f["python"]) for f in thread["frames"]], (lwp, text)
        for index, (ours, theirs) in enumerate(zip(frames, thread["frames"])):
            if ours != theirs:
                assert ours["guess"] and not theirs["guess"], (lwp, text)
                assert ours["kind"] == "jit" or frames[index - 1]["kind"] == "jit", text


def assert_no_untrue_frame(dump, core, text, dump_path):
    """Without the JIT code, a frame the walk steps over by stack scan may be missing
    (the toy JIT's frameless trampoline): the frames up to the first JIT one are the
    core's, every later one is one of the core's, in order, those found by a scan
    marked, and the walk still reaches main; the note says why."""
    assert_says_jit_code_is_missing(dump, dump_path)
    ours, theirs = dump["threads"][0]["frames"], core["threads"][0]["frames"]
    first_jit = next(i for i, f in enumerate(theirs) if f["kind"] == "jit")
    assert ours[:first_jit + 1] == theirs[:first_jit + 1], text
    names = iter(f["function"] for f in theirs)
    assert all(f["function"] in names for f in ours), text  # a subsequence
    assert any(f["guess"] for f in ours), text
    assert ours[-1]["function"] == "main", text


def assert_says_python_is_missing(dump, core, text, dump_path):
    """Each thread with its native frames up to the first JIT one (whose code a
    stack-only dump lacks), no Python frame, and why."""
    note = dump.get("runtime_note") or ""
    assert f"the minidump {dump_path} does not hold _PyRuntime" in note, dump
    assert "--style modified-memory or full" in note, note
    assert_says_jit_code_is_missing(dump, dump_path)
    assert text.startswith(f"note: {note}\n"), text
    dumped, cored = by_lwp(dump), by_lwp(core)
    assert set(dumped) == set(cored), text
    assert text.count("[Python state not in the dump]") == len(cored), text
    assert "[py]" not in text, text
    for lwp, thread in cored.items():
        assert not dumped[lwp]["python"], text
        expected = thread["frames"]
        first_jit = next((i for i, f in enumerate(expected) if f["kind"] == "jit"),
                         len(expected))
        assert first_jit >= 1, text
        names = [f["function"] for f in dumped[lwp]["frames"]]
        assert names[:first_jit] == [f["function"] for f in expected[:first_jit]], text


@pytest.fixture(scope="module")
def cpython_stop(tmp_path_factory):
    argv = [fixture_python("3.14"), STOP_INSTEAD_OF_TRAP, SCRIPTS / "jit_scenarios.py",
            "threads"]
    yield from one_stop(argv, tmp_path_factory.mktemp("minidump") / "cpython",
                        {"PYTHON_JIT": "1"})


@pytest.mark.parametrize("debugger", ["none", "lldb"])
def test_cpython_314_jit(cpython_stop, debugger):
    pid, core, dumps = cpython_stop
    core_document, core_text = read(core, debugger)
    # What the core shows, so that "the same" is not two empty stacks.
    assert len(core_document["threads"]) == 3, core_text
    assert "[py] spin (" in core_text and "[py] threads (" in core_text, core_text
    assert core_text.count("[jit shim] spin (") == 2, core_text
    full, full_text = read(dumps["full"], debugger)
    assert_same_threads(full, core_document, full_text)
    assert full["python_version"] == core_document["python_version"]
    modified, modified_text = read(dumps["modified-memory"], debugger)
    assert_guesses_only_after_missing_jit_code(modified, core_document, modified_text,
                                               dumps["modified-memory"])
    stack, stack_text = read(dumps["stack"], debugger, status=1)
    assert_says_python_is_missing(stack, core_document, stack_text, dumps["stack"])


@pytest.fixture(scope="module")
def toyjit_stop(tmp_path_factory):
    from tests.support import fixture_binary
    argv = [fixture_binary("toyjit"), "mixed", "3", "sigstop", "--perf-map"]
    yield from one_stop(argv, tmp_path_factory.mktemp("minidump") / "toyjit")


@pytest.mark.parametrize("debugger", ["none", "lldb"])
def test_toy_jit(toyjit_stop, debugger):
    _pid, core, dumps = toyjit_stop
    core_document, core_text = read(core, debugger, status=1)
    jit = [f["function"] for f in core_document["threads"][0]["frames"] if f["kind"] == "jit"]
    assert jit == ["toy::jit_fp", "toy::jit_frameless", "toy::enter_trampoline"] * 2, core_text
    for style in STYLES:
        document, text = read(dumps[style], debugger, status=1)
        if style == "full":
            assert_same_threads(document, core_document, text)
        else:
            assert_no_untrue_frame(document, core_document, text, dumps[style])
