"""bt and py-mixed-bt mark the same frame: where our unwinder ended the walk, bt's
frame, py-mixed-bt's text and its JSON all say why (GDB 13 and 18, live and core).

The fixture calls JIT code through ctypes; the inner JIT function scribbles its saved
rbp, as toyjit's --corrupt-fp does, and calls back into Python, which stops."""

import json

import jsonschema

from tests.support import PRINT_PID, REPO, parse_backtrace, pyenv_python, remove_perf_map, run_gdb

FIXTURE = REPO / "tests" / "fixtures" / "python" / "corrupt_fp_jit.py"
SCHEMA = json.loads((REPO / "docs" / "py-mixed-bt.schema.json").read_text())
REASON = "frame pointer chain broken: saved rbp 0x41414141 at 0x"
COMMANDS = ["echo @@bt\\n", "bt", "echo @@mixed\\n", "py-mixed-bt", "echo @@json\\n",
            "py-mixed-bt --json", "echo @@end\\n"]


def _section(output: str, marker: str) -> str:
    return output.split(f"@@{marker}\n", 1)[1].split("\n@@", 1)[0]


def _check(output: str) -> None:
    bt = parse_backtrace(_section(output, "bt"))
    last = bt[-1]
    assert last.function.startswith(f"toy::inner [unwind stopped: {REASON}"), output
    assert not any("[unwind stopped" in frame.function for frame in bt[:-1]), output
    text = [line for line in _section(output, "mixed").splitlines() if line.startswith("#")]
    assert text[-1] == f"#{last.level:<3} {last.function}", output
    assert not any("[unwind stopped" in line for line in text[:-1]), output
    document = json.loads(_section(output, "json"))
    jsonschema.validate(document, SCHEMA)
    thread = document["threads"][0]
    frames = thread["frames"]
    assert len(frames) == len(text) == len(bt), output
    assert frames[-1]["level"] == last.level and frames[-1]["kind"] == "jit", output
    assert frames[-1]["function"] == "toy::inner", output
    assert frames[-1]["stop_reason"].startswith(REASON), output
    assert thread["stop_reason"] == frames[-1]["stop_reason"], output
    assert all(frame["stop_reason"] is None and frame["guess"] is False
               for frame in frames[:-1]), output
    # The Python frames below the broken chain are not lost: under the last frame.
    assert [f["function"] for f in frames[-1]["python"]] == ["main", "<module>"], output


def test_walk_stopped_by_the_unwinder_is_marked_alike(gdb, tmp_path):
    core = tmp_path / "python.core"
    live = run_gdb(gdb, ["run", PRINT_PID, *COMMANDS, f"gcore {core}"],
                   [pyenv_python("3.12.1"), FIXTURE])
    try:
        assert core.exists(), live
        from_core = run_gdb(gdb, COMMANDS, [pyenv_python("3.12.1")], core=core)
    finally:
        remove_perf_map(live)
    _check(live)
    _check(from_core)
