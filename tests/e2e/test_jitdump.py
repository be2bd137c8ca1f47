"""CPython 3.13, 3.14, 3.15 with ``-X perf_jit``: each Python call runs through a perf trampoline,
and CPython describes every trampoline in a perf jitdump (/tmp/jit-PID.dump): its name,
code and ``.eh_frame``.  GDB's ``bt`` names the trampolines from the dump and unwinds
them by its CFI (``[via jitdump-cfi]``), live and on a core, with the Python frames
still listed under their eval loops.  CPython writes no perf map in this mode, so the
names can only come from the dump."""

import os
import re
import shutil

import pytest

from tests.python_expect import RECURSE, expected_recursion, python_frames_with_parents, \
    python_of
from tests.support import (PRINT_PID, assert_no_unnamed_frames, fixture_binary,
                           parse_backtrace, run_gdb)

VERSIONS = ["3.13.0", "3.14.6", "3.15.0rc2"]
VIA = " [via jitdump-cfi]"
PYELFTOOLS = 'python import sys; print("pyelftools imported:", "elftools" in sys.modules)'


def _dump_paths(output):
    return {f"/tmp/jit-{pid}.dump" for pid in re.findall(r"inferior-pid (\d+)", output)}


def _remove_dumps(output):
    for path in _dump_paths(output):
        try:
            os.unlink(path)
        except OSError:
            pass


def _check_backtrace(output):
    frames = parse_backtrace(output)
    assert_no_unnamed_frames(frames)
    names = [frame.function for frame in frames]
    assert "main" in names or "Py_BytesMain" in names, output
    trampolines = [name for name in names if name.startswith("py::")]
    assert trampolines == ([f"py::recurse:{RECURSE}{VIA}"] * 4
                           + [f"py::<module>:{RECURSE}{VIA}"]), output
    for index, name in enumerate(names):
        if name.startswith("py::"):  # between the eval loop it called and its caller
            assert "_PyEval_EvalFrameDefault" in names[index - 1], output
            assert "py_trampoline_evaluator" in names[index + 1], output
    python = [entry for entry, _parent in python_frames_with_parents(output)]
    assert python == expected_recursion(3), output


@pytest.mark.parametrize("version", VERSIONS)
def test_perf_jit_trampolines_are_named_and_unwound_from_the_dump(gdb, tmp_path, version):
    core = tmp_path / "python.core"
    live = run_gdb(gdb, ["run", PRINT_PID, "set jit-unwind show-method on", "bt",
                         "info jit-regions --all", f"gcore {core}"],
                   [python_of(version), "-X", "perf_jit", RECURSE])
    try:
        _check_backtrace(live)
        rows = [line.split() for line in live.splitlines()
                if re.match(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+jitdump\s", line)]
        assert [f"py::recurse:{RECURSE}"] in [row[4:] for row in rows], live
        # The records of the script's own functions were still in CPython's stdio buffer.
        assert re.search(r"^jitdump /tmp/jit-\d+\.dump: \d+ functions whose code is in "
                         r"memory, \d+ read from the writer's unflushed buffer$", live, re.M), live
        assert core.exists(), live
        # The dump is still on disk (and the records the process had not flushed yet are
        # in the core's copy of its stdio buffer).
        from_core = run_gdb(gdb, ["set jit-unwind show-method on", "bt"],
                            [python_of(version)], core=core)
        _check_backtrace(from_core)
    finally:
        _remove_dumps(live)


def test_a_dump_elsewhere_is_read_when_the_setting_names_it(gdb, tmp_path):
    python = python_of("3.13.0")
    core = tmp_path / "python.core"
    live = run_gdb(gdb, ["run", PRINT_PID, f"gcore {core}"],
                   [python, "-X", "perf_jit", RECURSE])
    (path,) = _dump_paths(live)
    moved = tmp_path / "kept.dump"
    try:
        shutil.move(path, moved)
    finally:
        _remove_dumps(live)
    without = run_gdb(gdb, ["set jit-unwind show-method on", "bt"], [python], core=core)
    names = [frame.function for frame in parse_backtrace(without)]
    assert not [name for name in names if name.startswith("py::")], without
    assert "main" in names or "Py_BytesMain" in names, without  # unwound all the same
    told = run_gdb(gdb, ["set jit-unwind show-method on", f"set jit-unwind jitdump {moved}",
                         "show jit-unwind jitdump", "info jit-regions", "bt"],
                   [python], core=core)
    assert f"reads the jitdump file {moved} first" in told, told
    assert f"\njitdump {moved}: " in told, told
    _check_backtrace(told)
    other = tmp_path / "other.dump"
    other.write_bytes(b"not a jitdump")
    wrong = run_gdb(gdb, [f"set jit-unwind jitdump {other}", "info jit-regions"],
                    [python], core=core)
    assert f"warning: {other} is no jitdump of process" in wrong, wrong


# The toy JIT of tests/fixtures/jitdump_jit.c: a function that realigns the stack, keeps
# its CFA in rbx and zeroes rbp, described (name, code, .eh_frame) in a jitdump still in
# the writer's stdio buffer, the file in a directory of its own that only the process's
# mapping of it names.
_DESCEND = re.compile(r"^#\d+\s+0x[0-9a-f]+ in descend \(depth=(\d+)\)", re.M)


def _check_toy(output, depth):
    frames = parse_backtrace(output)
    names = [frame.function for frame in frames]
    assert names[3:] == ["descend", "jit::realigned" + VIA] * (depth + 1) + ["main"], output
    # descend's own CFI unwound from the registers the JIT frame's CFI recovered.
    assert [int(d) for d in _DESCEND.findall(output)] == list(range(depth + 1)), output


def test_toy_jit_code_only_its_cfi_unwinds(gdb, tmp_path):
    program = fixture_binary("jitdump_jit")
    core = tmp_path / "toy.core"
    live = run_gdb(gdb, ["run", "set jit-unwind show-method on", "bt", "info jit-regions",
                         PYELFTOOLS, f"gcore {core}"], [program, "3", "--dir", tmp_path])
    _check_toy(live, 3)
    # The dump's .eh_frame is read by the plugin's own reader: no pyelftools (~30 ms).
    assert "pyelftools imported: False" in live, live
    assert re.search(rf"^jitdump {tmp_path}/jit-\d+\.dump: 1 function whose code is in "
                     r"memory, 1 read from the writer's unflushed buffer$", live, re.M), live
    from_core = run_gdb(gdb, ["set jit-unwind show-method on", "bt"], [program], core=core)
    _check_toy(from_core, 3)


def test_a_record_whose_code_changed_is_not_believed(gdb, tmp_path):
    program = fixture_binary("jitdump_jit")
    output = run_gdb(gdb, ["run", "set jit-unwind show-method on", "bt", "info jit-regions"],
                     [program, "2", "--stale", "--dir", tmp_path])
    assert "jit::realigned" not in output, output
    assert "[via jitdump-cfi]" not in output, output
    assert re.search(r": 0 functions whose code is in memory, 1 no longer in memory", output), \
        output
