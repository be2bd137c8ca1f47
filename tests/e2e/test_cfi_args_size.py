"""C++ built with -fexceptions between JIT frames (tests/fixtures/cxx_args_size.cc):
``cxx_caller``'s call frame information holds ``DW_CFA_GNU_args_size`` (it pushes stack
arguments around calls that may throw), which pyelftools 0.33 cannot decode.  LLDB 23
drops the callers of the frameless JIT code, so the plugin's walk unwinds cxx_caller
from its ``.eh_frame`` (``unwind/cfi.py``) and rejoins LLDB's frames at ``main``, as
lldb-19's py-mixed-bt does; GDB unwinds it with its own CFI.  Each lists every frame
in order to ``main``, live and on a core, and no live session imports pyelftools to do
it (its import alone costs ~30 ms)."""

import re
import subprocess

import pytest

from tests.driver import driver
from tests.lldb_driver import WAIT_FOR_PROVIDER, frames_to_main, run_lldb
from tests.support import GDB_BINARIES, fixture_binary, parse_backtrace, run_gdb

PYELFTOOLS = 'python import sys; print("pyelftools imported:", "elftools" in sys.modules)'
LLDB_PYELFTOOLS = PYELFTOOLS.replace("python ", "script ", 1)
JIT = "[jit"


def expected(depth: int):
    """Function names from cxx_stop outwards to main."""
    return ["cxx_stop", "jit_callback"] + [JIT, "cxx_caller", "jit_callback"] * depth + [
        JIT, "cxx_caller", "main"]


def _name(function: str) -> str:
    if function.startswith(JIT):
        return JIT
    return re.sub(r"\(.*", "", function.split(" [")[0].split("`")[-1])


def test_the_fixture_has_gnu_args_size_in_cxx_callers_fde():
    """What the tests below are about, checked by binutils rather than by our reader."""
    program = str(fixture_binary("cxx_args_size"))
    symbols = subprocess.run(["nm", program], capture_output=True, text=True,
                             check=True).stdout
    start = int(re.search(r"^([0-9a-f]+) T cxx_caller$", symbols, re.M).group(1), 16)
    frames = subprocess.run(["readelf", "--debug-dump=frames", program],
                            capture_output=True, text=True, check=True).stdout
    entries = re.split(r"\n(?=[0-9a-f]{8} )", frames)
    (fde,) = [entry for entry in entries if f"pc={start:016x}.." in entry]
    assert "DW_CFA_GNU_args_size: 16" in fde, fde


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """GDB 18's gcore of the program stopped at DEPTH 2, without the plugin."""
    path = tmp_path_factory.mktemp("cxx") / "cxx.core"
    output = run_gdb(GDB_BINARIES["gdb18"], ["run", f"gcore {path}"],
                     [fixture_binary("cxx_args_size"), "2"], plugin=False)
    assert path.exists(), output
    yield path
    path.unlink()


def check_gdb(output, depth):
    frames = parse_backtrace(output)
    names = [_name(frame.function) for frame in frames]
    assert names[names.index("cxx_stop"):] == expected(depth), output
    assert "unwind stopped" not in output and "guess" not in output, output


def check_lldb(output, depth):
    frames = frames_to_main(output)
    names = [_name(frame.function) for frame in frames]
    assert names[names.index("cxx_stop"):] == expected(depth), output
    assert not any("[unwind stopped" in frame.line for frame in frames), output


def test_gdb(gdb, core):
    output = run_gdb(gdb, ["run", "bt", PYELFTOOLS], [fixture_binary("cxx_args_size"), "1"])
    check_gdb(output, 1)
    assert "pyelftools imported: False" in output, output
    check_gdb(run_gdb(gdb, ["bt"], [fixture_binary("cxx_args_size")], core=core), 2)


def test_lldb(core):
    """LLDB's own frames stop making sense after the first JIT frame: cxx_caller's
    caller comes from its CFI (rbp-based, saved rbx and r14), then LLDB's frames again."""
    output = run_lldb(["process launch", "bt", LLDB_PYELFTOOLS],
                      [fixture_binary("cxx_args_size"), "1"])
    check_lldb(output, 1)
    assert "pyelftools imported: False" in output, output
    check_lldb(run_lldb([WAIT_FOR_PROVIDER, "bt"], [fixture_binary("cxx_args_size")],
                        core=core), 2)


def test_lldb19_py_mixed_bt():
    """lldb-19 has no frame providers: py-mixed-bt walks the same way."""
    output = driver("lldb19").launch([fixture_binary("cxx_args_size"), "1"],
                                     ["py-mixed-bt", LLDB_PYELFTOOLS]).whole
    names = [_name(name) for name in re.findall(r"^#\d+\s+(?:::)?(\S+)", output, re.M)]
    assert names[names.index("cxx_stop"):] == expected(1), output
    assert "stopped" not in output.split("(lldb) py-mixed-bt")[1], output
    assert "pyelftools imported: False" in output, output
