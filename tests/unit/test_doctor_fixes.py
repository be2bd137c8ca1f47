"""The fix commands ``jit-unwind doctor`` prints for a debugger's Python that lacks a
dependency: Debian's packages for Debian's debuggers, else that very Python's pip."""

from jit_unwind.cli.debuggers import Debugger
from jit_unwind.cli.doctor import Probe, pip_fix


def test_debians_gdb_gets_the_debian_package():
    found = Probe(version="3.11.2", prefix="/usr")
    assert pip_fix(Debugger("gdb", "/usr/bin/gdb"), found, "elftools") == \
        "apt-get install python3-pyelftools"


def test_a_venvs_debugger_gets_that_venvs_interpreter(tmp_path):
    interpreter = tmp_path / "venv" / "bin" / "python3.11"
    interpreter.parent.mkdir(parents=True)
    interpreter.touch()
    found = Probe(version="3.11.7", prefix=str(tmp_path / "venv"))
    assert pip_fix(Debugger("gdb", str(tmp_path / "venv" / "bin" / "gdb")), found,
                   "tabulate") == f"{interpreter} -m pip install tabulate"


def test_an_embedded_python_without_an_interpreter_is_named_by_its_prefix():
    found = Probe(version="3.12.3", prefix="/opt/lldb/python")
    fix = pip_fix(Debugger("lldb", "/opt/lldb/bin/lldb"), found, "elftools")
    assert fix == ("pip install pyelftools (into the Python 3.12.3 at /opt/lldb/python, "
                   "the one /opt/lldb/bin/lldb embeds)")
