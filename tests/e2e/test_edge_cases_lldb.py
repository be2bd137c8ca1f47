"""Edge cases of issue 10 under LLDB 23 (lldb-for-pwndbg), where they apply: JIT code
freed and reused between two stops, a thread running a subinterpreter's code, a program
without Python or JIT code, a perf map whose lines name no JIT code."""

import re

import pytest

from tests.e2e.test_edge_cases import SUBINTERPRETER, _python
from tests.lldb_driver import frames_to_main, parse_lldb_backtrace, run_lldb
from tests.python_expect import python_frames_with_parents
from tests.support import fixture_binary, remove_launched
from tests.toyjit_expect import check_backtrace

def _remove_perf_maps(output):
    remove_launched(output)


@pytest.mark.parametrize("perf_map", [False, True], ids=["no-perf-map", "perf-map"])
def test_jit_code_freed_and_reused_between_two_stops(perf_map):
    args = ["fp", "1", "sigtrap", "--remap"] + (["--perf-map"] if perf_map else [])
    output = run_lldb(["process launch", "bt", "jit-regions", "process continue", "bt",
                       "jit-regions"], [fixture_binary("toyjit"), *args])
    try:
        first, second = output.split("(lldb) process continue", 1)
        check_backtrace(frames_to_main(first), "fp", 1, perf_map, show_method=False)
        check_backtrace(frames_to_main(second), "frameless", 1, perf_map, show_method=False)
        if perf_map:
            assert "toy::jit_frameless" in second.split("(lldb) jit-regions", 1)[1], second
    finally:
        _remove_perf_maps(output)


@pytest.mark.parametrize("version", ["3.14", "3.12.1"])
def test_code_running_in_a_subinterpreter(tmp_path, version):
    script = tmp_path / "subinterpreter.py"
    script.write_text(SUBINTERPRETER)
    output = run_lldb(["process launch", "py-mixed-bt --all-threads"],
                      [_python(version), script])
    mixed = output.split("(lldb) py-mixed-bt", 1)[1]
    functions = [e[0] for e, _ in python_frames_with_parents(mixed, mixed=True)]
    assert functions[:2] == ["inner_sub", "<module>"], mixed
    assert functions[-2:] == ["outer_main", "<module>"], mixed


def test_program_without_python_or_jit_is_left_alone():
    program = [fixture_binary("deepstack"), "20"]
    ours = run_lldb(["process launch", "bt"], program)
    plain = run_lldb(["process launch", "bt"], program, plugin=False)
    names = lambda text: [f.function for f in parse_lldb_backtrace(text)]
    assert names(ours) == names(plain) != [], ours
    assert "[synthetic]" not in ours and "jit" not in ours.split("(lldb) process launch")[1]


def test_python_stopped_before_start_up_and_after_finalization():
    """Stopped at main (no interpreter yet) and in _PyRuntime_Finalize (none left): LLDB's
    own frames, py-mixed-bt lists them with no Python frame, jit-regions finds none."""
    output = run_lldb(["breakpoint set -n main", "process launch", "bt", "py-mixed-bt",
                       "jit-regions", "breakpoint set -n _PyRuntime_Finalize",
                       "process continue", "bt", "py-mixed-bt --all-threads", "jit-regions"],
                      [_python("3.14"), "-c", "pass"])
    start, end = output.split("(lldb) process continue", 1)
    for part, innermost in ((start, "main"), (end, "_PyRuntime_Finalize")):
        frames = parse_lldb_backtrace(part)
        assert frames[0].function == innermost and frames[-1].function == "_start", part
        mixed = part.split("(lldb) py-mixed-bt", 1)[1]
        assert "[no Python]" in mixed and "[py]" not in mixed, mixed
        assert re.search(rf"^#0\s+{innermost} at ", mixed, re.M), mixed
        assert "No JIT regions" in part, part
