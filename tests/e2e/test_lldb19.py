"""Debian's LLDB 19 has no scripted frame providers: lldb_init.py still loads, the
commands work, and bt stays LLDB's own."""

import re

from tests.driver import driver
from tests.lldb_driver import parse_lldb_backtrace
from tests.python_expect import python_of
from tests.support import REPO, fixture_binary, remove_launched

SCRIPT = REPO / "tests" / "fixtures" / "python" / "recurse_sigtrap.py"


def run_lldb19(tmp_path, program, commands):
    """What lldb-19 printed running ``program`` to its first stop, then ``commands``
    (tests/driver.py; ``tmp_path`` is kept for the callers' sake)."""
    return driver("lldb19").launch(program, commands).whole


def test_commands_without_frame_providers(tmp_path):
    output = run_lldb19(tmp_path, [fixture_binary("toyjit"), "mixed", "1", "sigtrap"],
                        ["bt", "jit-regions", "help jit-regions"])
    assert "target frame-provider" not in output
    names = [f.function for f in parse_lldb_backtrace(output)]
    assert names[:4][-1] == "jit_callback", output  # LLDB's own walk, as without us
    assert "[synthetic]" not in output, output
    assert "0x2000  maps" in output, output
    assert "List the JIT code regions" in output, output


def test_py_mixed_bt_without_frame_providers(tmp_path):
    output = run_lldb19(tmp_path, [python_of("3.12.1"), "-X", "perf", SCRIPT],
                        ["py-mixed-bt --python-only", "py-mixed-bt"])
    remove_launched(output)
    python_only = output.split("(lldb) py-mixed-bt --python-only")[1].split("(lldb) ")[0]
    assert python_only.count("[py] recurse (") == 4, output
    assert "[py] <module> (" in python_only, output
    # LLDB 19's own walk ends below the first trampoline; py-mixed-bt walks on through
    # JIT code itself, to _start, with each Python frame under its eval loop.
    mixed = output.split("(lldb) py-mixed-bt\n")[1].split("(lldb) ")[0]
    assert mixed.count(f"py::recurse:{SCRIPT}") == 4, output
    assert re.findall(r"^#\d+\s+(\S+)", mixed, re.M)[-1] == "_start", output
    assert "backtrace stopped" not in mixed, output
    under_eval = re.findall(r"^#\d+\s+_PyEval_EvalFrameDefault .*\n     \[py\] (\S+) ",
                            mixed, re.M)
    assert under_eval == ["recurse"] * 4 + ["<module>"], output
