"""Free-threaded CPython (3.13t, 3.14t) in every debugger, live and on the debugger's core.

tests/fixtures/python/three_threads.py runs a sleeper (in C, detached), a spinner (a hot
Python loop, attached), a waiter (blocked on a lock, detached) and the main thread (in
os.kill, attached).  ``py-mixed-bt --json --all-threads`` must list every thread with its
Python name, its Python frames under the native eval-loop frames running them, no GIL
holder (there is no GIL) and the state the runtime publishes: attached or detached.  The
text listing says the same in its headings, and ``bt`` shows the main thread's Python
frames under the eval loop.
"""

import json
import re

import jsonschema
import pytest

from tests.driver import MIXED_JSON, driver
from tests.e2e.test_scenarios import DEBUGGERS, check_lldb_bt
from tests.jit_python import FREE_THREADED, fixture_python
from tests.python_expect import SCRIPTS, marks, python_frames_with_parents
from tests.support import REPO

THREADS = SCRIPTS / "three_threads.py"
SCHEMA = REPO / "docs" / "py-mixed-bt.schema.json"
TEXT = "py-mixed-bt --all-threads --python-only"
EVAL = "_PyEval_EvalFrameDefault"
STATES = {"MainThread": "attached", "sleeper": "detached", "spinner": "attached",
          "waiter": "detached"}
HEADING = re.compile(r'^Thread \d+ \(LWP \d+\) "([^"]+)"( \[holds the GIL\])?'
                     r'(?: \[(attached|detached)\])?:$', re.M)


def check_document(document, version: str) -> None:
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    lines = marks(THREADS)
    script = str(THREADS)
    assert document["python_version"].startswith(version.rstrip("t") + "."), document
    threads = {t["python_name"]: t for t in document["threads"]}
    assert set(threads) == set(STATES), document
    for name, thread in threads.items():
        assert thread["holds_gil"] is None, thread
        assert thread["state"] == STATES[name], thread
        # every Python frame is listed under the native eval-loop frame that runs it
        under_eval = [p for f in thread["frames"] if f["kind"] == "eval" for p in f["python"]]
        assert under_eval == thread["python"], thread
        assert all(f["python"] == [] for f in thread["frames"] if f["kind"] != "eval"), thread
    python = {name: [(f["function"], f["file"], f["line"]) for f in t["python"]]
              for name, t in threads.items()}
    assert python["MainThread"] == [("main", script, lines["main"]),
                                    ("<module>", script, lines["module"])], document
    assert python["sleeper"][0] == ("sleeper", script, lines["sleeper"]), document
    assert python["waiter"][0] == ("waiter", script, lines["waiter"]), document
    assert "spinner" in [f for f, file, _ in python["spinner"] if file == script], document
    for name in ("sleeper", "spinner", "waiter"):
        assert [f for f, _, _ in python[name][-3:]] == [
            "Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap"], document


def check_headings(output: str) -> None:
    """The text listing names each thread with its state and no GIL holder."""
    headings = HEADING.findall(output)
    assert {name: state for name, gil, state in headings} == STATES, output
    assert not any(gil for _, gil, _ in headings), output


def by_lwp(document):
    """The threads without the debugger's names and numbers (LLDB numbers a core's
    threads in another order than the live process's), by kernel thread id."""
    return {thread["lwp"]: {k: v for k, v in thread.items() if k not in ("name", "number")}
            for thread in document["threads"]}


def selected_thread(document, bt: str):
    """The document reduced to the thread LLDB's ``bt`` shows ("* thread #N, ...")."""
    number = int(re.search(r"thread #(\d+)", bt).group(1))
    return {**document, "threads": [t for t in document["threads"] if t["number"] == number]}


def check_gdb_bt(output: str) -> None:
    lines = marks(THREADS)
    assert python_frames_with_parents(output) == [
        (("main", str(THREADS), lines["main"]), EVAL),
        (("<module>", str(THREADS), lines["module"]), EVAL)], output


@pytest.mark.parametrize("debugger", DEBUGGERS)
@pytest.mark.parametrize("version", FREE_THREADED)
def test_free_threaded_threads_live_and_core(version, debugger, tmp_path):
    tool = driver(debugger)
    program = [fixture_python(version), THREADS]
    core = tmp_path / tool.core_name()
    commands = [MIXED_JSON, TEXT, "bt"]
    live = tool.launch(program, commands, core=core)
    document = live.document()
    check_document(document, version)
    from_core = tool.open_core(program, core, commands)
    core_document = from_core.document()
    check_document(core_document, version)
    assert by_lwp(core_document) == by_lwp(document)
    for transcript, shown in ((live, document), (from_core, core_document)):
        check_headings(transcript.output(TEXT))
        if debugger.startswith("gdb"):
            check_gdb_bt(transcript.output("bt"))
        elif debugger == "lldb23":
            bt = transcript.output("bt")
            check_lldb_bt(bt, selected_thread(shown, bt))


@pytest.mark.parametrize("version", FREE_THREADED)
def test_a_free_threaded_build_with_the_gil_turned_on_names_its_holder(version):
    """PYTHON_GIL=1 turns the GIL on in a free-threaded build: the main thread holds it
    (and is attached), the spinner waits for it, detached."""
    document = driver("gdb18").launch([fixture_python(version), THREADS], [MIXED_JSON],
                                      env={"PYTHON_GIL": "1"}).document()
    threads = {t["python_name"]: (t["holds_gil"], t["state"]) for t in document["threads"]}
    assert threads == {"MainThread": (True, "attached"), "sleeper": (False, "detached"),
                       "spinner": (False, "detached"), "waiter": (False, "detached")}, document
