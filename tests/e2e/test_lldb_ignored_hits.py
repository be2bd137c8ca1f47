"""LLDB's ignored breakpoint hits (issue 34): LLDB makes the frame provider anew at each
one and asks it for frame 0; the plugin answers with LLDB's own frames there, never
shown, and decorates the stop the user sees.  Run through LLDB's own driver
(``lldb -b``), whose event thread prints each stop as a user's session does."""

import re
import subprocess

from tests.jit_python import jit_python
from tests.lldb_driver import lldb_server
from tests.python_expect import SCRIPTS, marks
from tests.support import REPO

LLDB = REPO / ".venv" / "bin" / "lldb"
SCRIPT = SCRIPTS / "jit_scenarios.py"
IGNORED = 10_000  # past the JIT's warm-up: os.getpid is called from the trace


def test_the_stop_after_ignored_hits_is_decorated(tmp_path):
    """break os_getpid, ignore 10,000 hits: LLDB stops at hit 10,001 with `bt` through
    the trace that calls it (named, leaf and hot under it) down to _start, as at any
    other stop, and counts every hit."""
    env = {"LLDB_DEBUGSERVER_PATH": lldb_server(), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [str(LLDB), "-b", "--no-lldbinit", "--no-use-colors",
         "-o", f"command script import {REPO / 'lldb_init.py'}",
         "-o", f"target create {jit_python('3.14')}",
         "-o", f"settings set -- target.run-args {SCRIPT} getpid",
         "-o", "settings set target.env-vars PYTHON_JIT=1",
         "-o", "breakpoint set -n os_getpid", "-o", f"breakpoint modify -i {IGNORED} 1",
         "-o", "run", "-o", "bt", "-o", "breakpoint list 1", "-o", "kill"],
        capture_output=True, text=True, errors="replace", timeout=300, env=env,
        stdin=subprocess.DEVNULL, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output, output
    bt = output.split("(lldb) bt\n", 1)[1].split("(lldb) breakpoint list", 1)[0]
    assert re.search(r"frame #0: .*`os_getpid", bt), bt
    assert re.search(rf"\[jit\] hot \({re.escape(str(SCRIPT))}:\d+\) trace 0x", bt), bt
    lines = marks(SCRIPT)
    python = re.findall(r"frame #\d+: \[py\] (\S+) at " + re.escape(SCRIPT.name) + r":(\d+)", bt)
    assert python == [("leaf", str(lines["leaf"])), ("hot", str(lines["hot"])),
                      ("<module>", str(lines["module"]))], bt
    assert re.search(r"`_start\b", bt), bt
    assert f"hit count = {IGNORED + 1}" in output, output
