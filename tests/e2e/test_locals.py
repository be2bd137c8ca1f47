"""``py-mixed-bt --locals`` in every debugger, live and on the debugger's core, and
``jit-unwind core CORE --locals``.

tests/fixtures/python/frame_locals.py stops three calls deep (in a hot loop: with
PYTHON_JIT=1 the innermost Python frame runs JIT code) with variables of known values
in each frame.  Each Python frame must list exactly its bound variables, in order, with
the short values pystack and py-spy show; the text's ``name = value`` lines must say what
the JSON says; the core must give what the live process gave.
"""

import json
import subprocess
import time
import re

import jsonschema
import pytest

from tests.driver import driver
from tests.e2e.test_cli import jit_unwind
from tests.jit_python import fixture_python
from tests.locals_expect import EXPECTED, OBJECT, SCRIPT
from tests.support import GDB_BINARIES, REPO, pyenv_python, run_gdb

SCHEMA = json.loads((REPO / "docs" / "py-mixed-bt.schema.json").read_text())
TEXT = "py-mixed-bt --locals"
PYTHON_ONLY = "py-mixed-bt --python-only --locals"
JSON = "py-mixed-bt --locals --json"
DEBUGGERS = ["gdb13", "gdb18", "lldb23"]
# name -> (interpreter, environment): the 3.14 JIT build with the JIT on, pyenv's 3.12
# (offsets from the built-in table) and a free-threaded build (tagged stack references)
INTERPRETERS = {
    "3.14-jit": (lambda: fixture_python("3.14"), {"PYTHON_JIT": "1"}),
    "3.12": (lambda: pyenv_python("3.12.1"), {}),
    "3.14t": (lambda: fixture_python("3.14t"), {}),
}
def python_frames(document):
    thread, = document["threads"]
    return thread["python"]


def check_document(document) -> None:
    jsonschema.validate(document, SCHEMA)
    frames = python_frames(document)
    assert [f["function"] for f in frames] == list(EXPECTED), document
    for frame in frames:
        found = frame["locals"]
        assert found["omitted"] == 0 and "error" not in found, frame
        shown = [(v["name"], v["kind"], v["type"], v["value"]) for v in found["variables"]]
        expected = [(name, kind, type_name,
                     value if value is not OBJECT else f"<{type_name} at {v['address']:#x}>")
                    for (name, kind, type_name, value), v in zip(EXPECTED[frame["function"]],
                                                                  found["variables"])]
        assert shown == expected, frame
        # objects are where the document says (a tagged int has no object)
        assert all(v["address"] for v in found["variables"] if v["name"] != "i"), frame


def text_locals(output: str):
    """``[(frame line, [variable lines])]`` of a py-mixed-bt --locals text."""
    frames = []
    for line in output.splitlines():
        if "[py] " in line:
            frames.append((line.strip(), []))
        elif frames and re.match(r"^ {6,}\S", line) and not line.lstrip().startswith("#"):
            frames[-1][1].append(line.strip())
    return frames


def check_text(output: str, document) -> None:
    """The text says what the JSON says, frame by frame."""
    expected = [(f"[py] {f['function']} ({f['file']}:{f['line']})",
                 [f"{v['name']} = {v['value']}" for v in f["locals"]["variables"]])
                for f in python_frames(document)]
    assert text_locals(output) == expected, output


def locals_of(document):
    return [(f["function"], f["locals"]) for f in python_frames(document)]


@pytest.mark.parametrize("debugger", DEBUGGERS)
@pytest.mark.parametrize("interpreter", list(INTERPRETERS))
def test_locals_live_and_core(interpreter, debugger, tmp_path):
    make_python, env = INTERPRETERS[interpreter]
    tool = driver(debugger)
    program = [make_python(), SCRIPT]
    core = tmp_path / tool.core_name()
    commands = [JSON, TEXT, PYTHON_ONLY]
    live = tool.launch(program, commands, env=env, core=core)
    document = live.document(JSON)
    check_document(document)
    inner_native = [f for f in document["threads"][0]["frames"]
                    if [p["function"] for p in f["python"]][:1] == ["inner"]]
    assert [f["kind"] for f in inner_native] == [
        "jit" if interpreter.endswith("-jit") else "eval"], document
    from_core = tool.open_core(program, core, commands)
    core_document = from_core.document(JSON)
    check_document(core_document)
    assert locals_of(core_document) == locals_of(document)
    for transcript, shown in ((live, document), (from_core, core_document)):
        check_text(transcript.output(TEXT), shown)
        check_text(transcript.output(PYTHON_ONLY), shown)


def test_without_locals_no_variables_are_listed():
    document = driver("gdb18").launch([pyenv_python("3.12.1"), SCRIPT],
                                      ["py-mixed-bt --json"]).document("py-mixed-bt --json")
    jsonschema.validate(document, SCHEMA)
    assert all("locals" not in f for f in python_frames(document)), document


def test_cli_core_locals(tmp_path):
    """``jit-unwind core CORE --locals`` (the executable found in the core) lists them."""
    python = fixture_python("3.14")
    core = tmp_path / "locals.core"
    output = run_gdb(GDB_BINARIES["gdb13"], ["set environment PYTHON_JIT=1", "run",
                                             f"gcore {core}"],
                     [python, SCRIPT], plugin=False)
    assert core.exists(), output
    result = jit_unwind("core", core, "--locals")
    assert result.returncode == 0, result
    frames = dict(text_locals(result.stdout))
    inner = next(lines for line, lines in frames.items() if line.startswith("[py] inner "))
    assert inner[:5] == ["count = 3", "flag = True", r"data = b'\x00ab'",
                         f"big = {2 ** 100}", "negative = -7"], result.stdout
    assert inner[-1] == "i = 10000", result.stdout
    outer = next(lines for line, lines in frames.items() if line.startswith("[py] outer "))
    assert [line for line in outer if not line.startswith(("items", "closure"))] == [
        "number = 42", "text = 'héllo'", "nothing = None", "ratio = 2.5",
        "shared = 'from outer'"], result.stdout
    as_json = jit_unwind("core", core, "--locals", "--json")
    assert as_json.returncode == 0, as_json
    check_document(json.loads(as_json.stdout))


def test_cli_attach_locals():
    """``jit-unwind attach PID --locals`` on a live CPython 3.14 sleeping in a function."""
    script = ("import time\n"
              "def nap(seconds):\n"
              "    label = 'zzz'\n"
              "    print('ready', flush=True)\n"
              "    time.sleep(seconds)\n"
              "nap(300)\n")
    process = subprocess.Popen([str(fixture_python("3.14")), "-c", script],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # from print to time.sleep
        result = jit_unwind("attach", "--locals", process.pid)
        assert result.returncode == 0, result
        assert dict(text_locals(result.stdout))["[py] nap (<string>:5)"] == [
            "seconds = 300", "label = 'zzz'"], result.stdout
        assert process.poll() is None  # detached, not killed
    finally:
        process.kill()
        process.wait()
