"""CPython 3.12 with -X perf under real LLDB 23: bt through the perf trampolines to
_start (LLDB alone stops at the first one), and py-mixed-bt, live and from a core."""

import json
import re
from pathlib import Path

from tests.lldb_driver import (SELECT_EVERY_FRAME, WAIT_FOR_PROVIDER,
                               parse_lldb_backtrace, run_lldb)
from tests.python_expect import python_of
from tests.support import GDB_BINARIES, REPO, run_gdb

SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"
NAMES = [f"py::recurse:{SCRIPT}"] * 4 + [f"py::<module>:{SCRIPT}"]


def check_bt(output):
    frames = parse_lldb_backtrace(output)
    names = [f.function for f in frames]
    assert [n for n in names if n.startswith("py::")] == NAMES, output
    for index, name in enumerate(names):
        if name.startswith("py::"):
            assert names[index - 1] == "_PyEval_EvalFrameDefault", output
            assert names[index + 1] == "py_trampoline_evaluator", output
    assert "Py_BytesMain" in names and names[-1] == "_start", output
    assert not any(n.startswith("??") for n in names), output
    assert "unwind stopped" not in output, output


def check_mixed(output):
    text = output.split("(lldb) py-mixed-bt\n")[1].split("(lldb) ")[0]
    assert re.findall(r"^     \[py\] (\S+) ", text, re.M) == ["recurse"] * 4 + ["<module>"], text
    assert "[holds the GIL]" in text, text
    assert "backtrace stopped" not in text, text
    document = json.loads(output.split("(lldb) py-mixed-bt --json\n")[1].split("\n(lldb) ")[0])
    thread = document["threads"][0]
    assert [f["function"] for f in thread["python"]] == ["recurse"] * 4 + ["<module>"]
    assert document["python_version"].startswith("3.12")


def test_perf_trampolines_live_and_from_gcore(tmp_path):
    python = python_of("3.12.1")
    core = tmp_path / "python.core"
    live = run_lldb(["process launch", "bt", "py-mixed-bt", "py-mixed-bt --json",
                     SELECT_EVERY_FRAME], [python, "-X", "perf", SCRIPT])
    pid = re.search(r"Process (\d+) launched", live).group(1)
    try:
        check_bt(live)
        check_mixed(live)
        assert "error" not in live.split(SELECT_EVERY_FRAME)[1], live
        run_gdb(GDB_BINARIES["gdb13"], ["run", f"gcore {core}"],
                [python, "-X", "perf", SCRIPT], plugin=False)
        # The core's perf map is the gcore run's: same script, same trampolines.
        from_core = run_lldb([WAIT_FOR_PROVIDER, "bt", "py-mixed-bt", "py-mixed-bt --json"],
                             [python], core=core)
        check_bt(from_core)
        check_mixed(from_core)
    finally:
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
