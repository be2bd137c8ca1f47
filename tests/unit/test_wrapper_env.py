"""Which variables of the debugger's environment a pip wrapper set (wrapper_env's rule)."""

from jit_unwind.wrapper_env import wrapper_variables

VENV = "/opt/venv"
GDB_DATA = "/opt/venv/lib/python3.11/site-packages/gdb_for_pwndbg/_vendor/share/gdb/python"
WRAPPER = {"PYTHONHOME": f"{VENV}:{VENV}", "PYTHONPATH": f"{VENV}/bin:/usr/lib/python3.11",
           "PYTHONNOUSERSITE": "1"}


def test_the_wrappers_variables_are_named():
    assert wrapper_variables(WRAPPER, (VENV, VENV), GDB_DATA) == \
        ["PYTHONHOME", "PYTHONPATH", "PYTHONNOUSERSITE"]


def test_a_home_the_user_chose_is_theirs():
    environ = dict(WRAPPER, PYTHONHOME="/home/me/python")
    assert wrapper_variables(environ, ("/home/me/python",) * 2, "/usr/share/gdb/python") == []
    assert wrapper_variables(environ, (VENV, VENV), GDB_DATA) == []


def test_a_debugger_outside_the_home_is_no_wrappers():
    assert wrapper_variables(WRAPPER, (VENV, VENV), "/usr/share/gdb/python") == []
    assert wrapper_variables(WRAPPER, (VENV, VENV), VENV + "-other/gdb") == []


def test_no_home_nothing_to_remove():
    assert wrapper_variables({"PYTHONPATH": "/x"}, (VENV, VENV), GDB_DATA) == []


def test_a_value_the_user_set_for_the_program_is_theirs():
    """GDB's "set environment PYTHONHOME=..." before the plugin loaded: only the
    variables the program would still get from the wrapper are named."""
    program = dict(WRAPPER, PYTHONHOME="/home/me/python")
    assert wrapper_variables(WRAPPER, (VENV, VENV), GDB_DATA, program.get) == \
        ["PYTHONPATH", "PYTHONNOUSERSITE"]
