"""``jit-unwind core --debugger none`` as a user runs it beyond the same-JSON cores
(``test_same_json.py``): GDB 18's document on a core of three threads (two of them in
CPython 3.14's JIT code; thread numbers, LWPs and names included), of CPython 3.15's JIT
(traces registered through GDB's JIT interface; sources reached through a symlink, which
GDB shows by their real path) and of clang's tail-calling 3.14 with the JIT (DWARF 5 as
clang writes it: no .debug_aranges, indexed strings and ranges), node's walk through V8's
builtins (code without CFI); a file that is no core is a one-line usage error
(``attach --debugger none``: tests/e2e/test_attach_no_debugger.py).  GDB's tail-call
frames are left out of its documents, as in ``test_same_json.py``."""

import pytest

from tests.e2e.test_cli import assert_one_line_error, jit_unwind
from tests.e2e.test_node import FLAGS as NODE_FLAGS
from tests.e2e.test_node import NODE, RUNTIMES
from tests.e2e.test_same_json import (differences, gdb_document, no_debugger,
                                      without_tail_calls)
from tests.jit_python import fixture_python
from tests.python_expect import SCRIPTS
from tests.support import GDB_BINARIES, PRINT_PID, remove_perf_map, run_gdb

SCRIPT = SCRIPTS / "raise_in_hot_loop.py"


@pytest.fixture(scope="module")
def threads_core(tmp_path_factory):
    """GDB 18's gcore of CPython 3.14 with the JIT on, three threads."""
    python = fixture_python("3.14")
    core = tmp_path_factory.mktemp("threads") / "program.core"
    output = run_gdb(GDB_BINARIES["gdb18"], ["set environment PYTHON_JIT=1", "run",
                                             f"gcore {core}"],
                     [python, SCRIPTS / "jit_scenarios.py", "threads"], plugin=False)
    assert core.exists(), output
    return python, core


def test_three_threads_give_gdbs_document(threads_core, tmp_path):
    python, core = threads_core
    gdb, tail_calls = gdb_document([python], core, tmp_path)
    expected, _ = without_tail_calls(
        gdb, lambda number, frame: frame["level"] in tail_calls.get(number, ()))
    assert len(expected["threads"]) == 3, expected
    assert sum(any(f["kind"] == "jit" for f in t["frames"]) for t in expected["threads"]) == 2
    status, document, errors = no_debugger(core)  # the executable the core names
    assert status == 0, errors
    assert document == expected, "--debugger none:\n" + differences(document, expected)


@pytest.mark.parametrize("python", ["3.15-jit", "3.14-tailcall"])
def test_jit_builds_give_gdbs_document(python, tmp_path):
    program = [fixture_python(python), SCRIPT]
    core = tmp_path / "program.core"
    output = run_gdb(GDB_BINARIES["gdb18"], ["set environment PYTHON_JIT=1", "run", PRINT_PID,
                                             f"gcore {core}"], program, plugin=False)
    try:
        assert core.exists(), output
        gdb, tail_calls = gdb_document(program, core, tmp_path)
        expected, _ = without_tail_calls(
            gdb, lambda number, frame: frame["level"] in tail_calls.get(number, ()))
        assert any(f["kind"] == "jit" for f in expected["threads"][0]["frames"]), expected
        status, document, errors = no_debugger(core, program[0])
        assert status == 0, errors
        assert document == expected, "--debugger none:\n" + differences(document, expected)
    finally:
        remove_perf_map(output)




def test_a_file_that_is_no_core(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a core\n")
    assert_one_line_error(jit_unwind("core", "--debugger", "none", text, "/bin/true"), 2,
                          ["notes.txt", "core file"])


def test_inflated_sections_are_kept_and_read_back_the_same(threads_core, tmp_path):
    """libc's /usr/lib/debug file compresses its DWARF: the sections inflated are kept
    in $XDG_CACHE_HOME/jit-unwind/dwarf-sections, and the next run, a run after an entry
    was damaged and a run with the cache off print the same stacks.  (The answers kept
    per pc would spare the later runs the DWARF: kept off here.)"""
    python, core = threads_core
    cache = tmp_path / "cache"

    def run(cache_home, **env):
        return jit_unwind("core", "--debugger", "none", core, python,
                          env={"XDG_CACHE_HOME": str(cache_home),
                               "JIT_UNWIND_FRAME_CACHE": "0", **env})

    first = run(cache)
    assert first.returncode == 0 and "[jit] spin (" in first.stdout, first
    kept = sorted((cache / "jit-unwind" / "dwarf-sections").glob("*.section"))
    assert kept, first.stderr
    assert run(cache).stdout == first.stdout
    with open(kept[0], "r+b") as handle:  # an entry cut short: not used, written again
        handle.truncate(100)
    assert run(cache).stdout == first.stdout
    assert kept[0].stat().st_size > 100
    off = run(tmp_path / "off", JIT_UNWIND_SECTION_CACHE="0")
    # (elf-facts, the files' symbol-table answers, is a cache of its own.)
    assert off.stdout == first.stdout, off
    assert not (tmp_path / "off" / "jit-unwind" / "dwarf-sections").exists(), off


def test_frames_are_kept_and_read_back_the_same(threads_core, tmp_path):
    """What DWARF says at each pc is kept in $XDG_CACHE_HOME/jit-unwind/dwarf-frames:
    the next run, a run after an entry was damaged and a run with the cache off print
    the same stacks (functions, inlined ones, files and lines)."""
    python, core = threads_core
    cache = tmp_path / "cache"

    def run(cache_home, **env):
        return jit_unwind("core", "--debugger", "none", core, python,
                          env={"XDG_CACHE_HOME": str(cache_home), **env})

    first = run(cache)
    assert first.returncode == 0 and "[jit] spin (" in first.stdout, first
    assert " at " in first.stdout and ".c:" in first.stdout, first.stdout
    kept = sorted((cache / "jit-unwind" / "dwarf-frames").glob("*.frames"))
    assert kept, first.stderr
    assert run(cache).stdout == first.stdout
    for entry in kept:  # garbage where the answers were: read from DWARF again
        entry.write_bytes(b"\x00garbage")
    assert run(cache).stdout == first.stdout
    off = run(tmp_path / "off", JIT_UNWIND_FRAME_CACHE="0", JIT_UNWIND_SECTION_CACHE="0")
    assert off.stdout == first.stdout, off
    kept_off = [path.name for path in (tmp_path / "off" / "jit-unwind").glob("*")]
    assert not {"dwarf-sections", "dwarf-frames"} & set(kept_off), kept_off


def test_node_walk_goes_through_code_without_cfi_as_gdbs(tmp_path):
    """node 20 (V8) stopped in kill() under optimized JavaScript, called through V8's
    embedded builtins (code without CFI, remapped near the JIT code): the walk goes on
    through them to ``_start``, frame for frame where GDB 18 with jit-unwind goes (it
    used to stop at the first builtin: no CFI, no frame pointer)."""
    program = [NODE, *NODE_FLAGS, RUNTIMES / "node_hot.js"]
    core = tmp_path / "node.core"
    output = run_gdb(GDB_BINARIES["gdb18"], ["run", PRINT_PID, f"gcore {core}"], program,
                     plugin=False)
    try:
        assert core.exists(), output
        gdb, _ = gdb_document(program, core, tmp_path)
        status, document, errors = no_debugger(core, program[0])
        assert document is not None, errors
        ours, theirs = (document["threads"][0]["frames"], gdb["threads"][0]["frames"])
        assert [f["pc"] for f in ours] == [f["pc"] for f in theirs], (
            "--debugger none:\n" + differences(document, gdb))
        assert ours[-1]["function"] == "_start", ours[-1]
        assert sum(f["kind"] == "jit" for f in ours) >= 10, ours
    finally:
        remove_perf_map(output)
