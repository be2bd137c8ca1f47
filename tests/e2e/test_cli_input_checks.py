"""What ``jit-unwind core`` says about input that is wrong, before any debugger reads it
(issue 34, items 4 and 5), for GDB, LLDB and ``--debugger none`` alike: an executable
that is not the program the core was made of (another program, another CPython; a
program replaced at the path the core names), a program that is gone, a script or a
core given as EXECUTABLE, a directory given as the core, a core cut short before its
notes.  Each is one line on stderr and exit status 2; ``--force`` reads on and says the
stacks may be wrong.  Never refused: the right program through a symlink, a stripped
copy of it, a copy without a build ID, the program of a core of ``ld.so PROGRAM``."""

import os
import shutil
import subprocess
import time

import pytest

from tests.e2e.test_cli import assert_one_line_error, jit_unwind
from tests.jit_python import fixture_python
from tests.python_expect import SCRIPTS
from tests.support import GDB_BINARIES, run_gdb

DEBUGGERS = ["gdb", "lldb", "none"]


@pytest.fixture(scope="module")
def jit_core(tmp_path_factory):
    """GDB 13's gcore of CPython 3.14 with the JIT on, three threads."""
    python = fixture_python("3.14")
    core = tmp_path_factory.mktemp("checks") / "jit.core"
    output = run_gdb(GDB_BINARIES["gdb13"], ["set environment PYTHON_JIT=1", "run",
                                             f"gcore {core}"],
                     [python, SCRIPTS / "jit_scenarios.py", "threads"], plugin=False)
    assert core.exists(), output
    return python, core


def build_id(path) -> str:
    notes = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True,
                           check=True).stdout
    return notes.split("Build ID: ")[1].split()[0]


def gcore_of(program, core, *args, meanwhile=lambda: None):
    """gcore of ``program ARGS`` (a C program: no Python needed) while it sleeps, after
    ``meanwhile()``."""
    process = subprocess.Popen([str(program), *map(str, args)])
    try:
        time.sleep(0.3)
        meanwhile()
        subprocess.run([str(GDB_BINARIES["gdb13"]), "-nx", "-q", "-batch", "-iex",
                        "set debuginfod enabled off", "-p", str(process.pid),
                        "-ex", f"gcore {core}"], capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    finally:
        process.kill()
        process.wait()
    assert core.exists()
    return core


# -- (4) the executable the core was made of ----------------------------------------------

@pytest.mark.parametrize("debugger", DEBUGGERS)
@pytest.mark.parametrize("given", ["/bin/ls", "3.13"])
def test_another_program_is_refused_naming_the_one_the_core_wants(jit_core, debugger,
                                                                   given):
    python, core = jit_core
    wrong = fixture_python(given) if given[0].isdigit() else given
    result = jit_unwind("core", "--debugger", debugger, core, wrong)
    assert_one_line_error(result, 2, [
        f"{wrong} is not the program {core} was made of", f"{python} (build ID "
        f"{build_id(python)})", f"its build ID is {build_id(wrong)}", "--force"])
    assert result.stdout == ""


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_force_reads_on_and_says_the_stacks_may_be_wrong(jit_core, debugger):
    python, core = jit_core
    wrong = fixture_python("3.13")
    result = jit_unwind("core", "--force", "--debugger", debugger, core, wrong)
    assert result.returncode in (0, 1), result
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"jit-unwind: warning: {wrong} is not the program"), result.stderr
    assert str(python) in last and "(--force): the stacks may be wrong" in last, last


def test_the_right_program_by_another_name_is_read(jit_core, tmp_path):
    """A symlink, a stripped copy (the same build ID) and a copy without its build ID
    note (compared by where the core maps its segments) are the program; CPython 3.13
    without a build ID is not."""
    python, core = jit_core
    link = tmp_path / "python-link"
    link.symlink_to(python)
    stripped = tmp_path / "python-stripped"
    subprocess.run(["strip", "-o", str(stripped), str(python)], check=True)
    no_id = tmp_path / "python-no-build-id"
    subprocess.run(["objcopy", "--remove-section", ".note.gnu.build-id", str(python),
                    str(no_id)], check=True)
    for program in (link, stripped, no_id):
        result = jit_unwind("core", "--debugger", "none", "--python-only", core, program)
        assert result.returncode == 0, result
        assert result.stdout.count("[py] spin (") == 2, result.stdout
    other = tmp_path / "python3.13-no-build-id"
    subprocess.run(["objcopy", "--remove-section", ".note.gnu.build-id",
                    str(fixture_python("3.13")), str(other)], check=True)
    assert_one_line_error(jit_unwind("core", "--debugger", "none", core, other), 2,
                          [f"{other} is not the program", str(python),
                           "its segments are not where the core maps the program's"])


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_a_program_replaced_where_the_core_names_it(debugger, tmp_path):
    """No EXECUTABLE given: the file now at the core's path is another build."""
    program = tmp_path / "app"
    shutil.copy("/bin/sleep", program)
    core = gcore_of(program, tmp_path / "app.core", 30)
    made_of = build_id(program)
    shutil.copy("/bin/ls", program)
    result = jit_unwind("core", "--debugger", debugger, core)
    assert_one_line_error(result, 2, [
        f"{core} was made of {program} (build ID {made_of}), but the file there now is "
        f"another: its build ID is {build_id('/bin/ls')}", "--force"])


@pytest.mark.parametrize("debugger", ["gdb", "none"])
def test_a_program_replaced_while_it_ran(debugger, tmp_path):
    """NT_FILE names it "PATH (deleted)" (an upgrade replaced it): the file now at PATH
    is read when it is the same build, refused when it is another."""
    program = tmp_path / "app"
    shutil.copy("/bin/sleep", program)

    def replace():
        program.unlink()
        shutil.copy("/bin/sleep", program)

    core = gcore_of(program, tmp_path / "app.core", 30, meanwhile=replace)
    result = jit_unwind("core", "--debugger", debugger, core)
    assert result.returncode == 1, result  # read: a C program has no Python frames
    assert f"executable {program} (named by the core)" in result.stderr, result.stderr
    assert "__libc_start_main" in result.stdout, result.stdout
    shutil.copy("/bin/ls", program)
    assert_one_line_error(jit_unwind("core", "--debugger", debugger, core), 2, [
        f"was made of {program} (deleted) (build ID {build_id('/bin/sleep')}), but the "
        "file there now is another"])


@pytest.mark.parametrize("debugger", ["gdb", "none"])
def test_a_program_that_is_gone(debugger, tmp_path):
    program = tmp_path / "app"
    shutil.copy("/bin/sleep", program)
    core = gcore_of(program, tmp_path / "app.core", 30)
    made_of = build_id(program)
    program.unlink()
    assert_one_line_error(jit_unwind("core", "--debugger", debugger, core), 2, [
        f"{core} was made of {program} (build ID {made_of}), which is not on this "
        "machine", "jit-unwind core CORE EXECUTABLE"])


@pytest.mark.parametrize("debugger", ["gdb", "none"])
def test_a_core_of_a_program_run_through_ld_so_takes_the_program(debugger, tmp_path):
    """`ld.so /bin/sleep 30`: the core names ld.so, the user gives sleep (GDB's way)."""
    loader = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
    core = gcore_of(loader, tmp_path / "ldso.core", "/bin/sleep", 30)
    for program in ("/bin/sleep", loader):
        result = jit_unwind("core", "--debugger", debugger, core, program)
        assert result.returncode != 2 and "is not the program" not in result.stderr, result


# -- (5) input that is not what it should be ---------------------------------------------

@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_a_script_as_executable_names_the_program_wanted(jit_core, debugger, tmp_path):
    python, core = jit_core
    script = tmp_path / "run.py"
    script.write_text("#!/usr/bin/env python3\nprint('hello')\n")
    shell = tmp_path / "run.sh"
    shell.write_text("#!/bin/sh\nexec python3 run.py\n")
    for given, line in ((script, "#!/usr/bin/env python3"), (shell, "#!/bin/sh")):
        result = jit_unwind("core", "--debugger", debugger, core, given)
        assert_one_line_error(result, 2, [f"{given} is a script ({line}), not an "
                                          f"executable", f"made of, {python}"])


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_a_core_as_executable(jit_core, debugger):
    _python, core = jit_core
    assert_one_line_error(jit_unwind("core", "--debugger", debugger, core, core), 2,
                          [f"{core} is a core file, not an executable"])


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_a_directory_as_the_core(debugger, tmp_path):
    assert_one_line_error(jit_unwind("core", "--debugger", debugger, tmp_path), 2,
                          [f"{tmp_path} is a directory, not a core file"])


@pytest.mark.parametrize("debugger", DEBUGGERS)
def test_a_core_cut_short_before_its_notes(jit_core, debugger, tmp_path):
    """`truncate -s` to half: gcore writes the notes last."""
    python, core = jit_core
    half = tmp_path / "half.core"
    shutil.copy(core, half)
    size = half.stat().st_size
    os.truncate(half, size // 2)
    for args in ((half,), (half, python)):
        result = jit_unwind("core", "--debugger", debugger, *args)
        assert_one_line_error(result, 2, [
            f"the core file {half} is truncated: it has {size // 2} bytes",
            "its notes (the threads' registers, the mapped files) are cut off"])
