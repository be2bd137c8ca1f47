"""The CPython runtime reader on real, stopped pyenv interpreters (no debugger).

Each test starts tests/fixtures/python/stop_in_recursion.py, which stops itself with
SIGSTOP, reads its memory through /proc/PID/mem and checks functions, files and lines
(taken from the script's `# MARK:` comments) of every Python frame.
"""

import linecache
import os
import shutil
import subprocess

import pytest

from jit_unwind.cpython import (CPythonError, PyVersion, UnsupportedVersionError,
                                find_runtime, read_python_threads,
                                version_from_library_name)
from jit_unwind.target import JitUnwindError
from tests.jit_python import FREE_THREADED, fixture_python
from tests.unit._proc import RECURSE_SCRIPT, pyenv_python, stopped_python

VERSIONS = ["3.11.7", "3.12.1", "3.13.0"]
SCRIPT = str(RECURSE_SCRIPT)


def script_frames(marks, depth, stop_mark="stop"):
    """(function, line, is_entry) of the script's frames, innermost first."""
    frames = [("leaf", marks[stop_mark], False), ("recurse", marks["leaf-call"], False)]
    frames += [("recurse", marks["recurse-call"], False)] * (depth - 1)
    frames[-1] = (frames[-1][0], frames[-1][1], True)  # entered through map()
    frames.append(("through_builtin", marks["map-call"], False))
    return frames


def summary(frames):
    return [(f.function, f.line, f.is_entry) for f in frames]


def check_common(thread):
    for frame in thread.frames:
        assert not frame.error, frame
        assert frame.owner == "thread", frame
        assert frame.line is not None and frame.line >= frame.firstlineno, frame
        assert os.path.isabs(frame.filename), frame
    assert thread.stop_reason == ""


@pytest.mark.parametrize("version", VERSIONS)
def test_main_thread_three_deep(version):
    with stopped_python(pyenv_python(version), ["3"]) as process:
        runtime = find_runtime(process.memory, process.lookup())
        assert (runtime.version.major, runtime.version.minor, runtime.version.micro) == \
            tuple(int(part) for part in version.split("."))
        threads = runtime.threads()
        assert len(threads) == 1
        thread = threads[0]
        marks = process.marks
        expected = script_frames(marks, 3) + [("main", marks["main-call"], False),
                                              ("<module>", marks["module-call"], True)]
        assert summary(thread.frames) == expected
        assert {f.filename for f in thread.frames} == {SCRIPT}
        check_common(thread)
        assert thread.thread_id == process.facts["ident"]
        assert thread.native_thread_id == process.facts["native_id"] == process.pid
        assert thread.holds_gil is True
        assert [len(group) for group in thread.eval_loop_groups()] == [4, 3]
        # A frame can be read alone by its address, as the native-frame merge will.
        for frame in thread.frames:
            assert runtime.frame_at(frame.address) == frame
        assert runtime.thread_by_native_id(process.pid) == thread


@pytest.mark.parametrize("version", VERSIONS)
def test_thousand_frames_deep(version):
    with stopped_python(pyenv_python(version), ["1000"]) as process:
        threads = read_python_threads(process.memory, process.lookup())
        assert len(threads) == 1
        frames = threads[0].frames
        marks = process.marks
        assert summary(frames[:1002]) == script_frames(marks, 1000)
        assert summary(frames[1002:]) == [("main", marks["main-call"], False),
                                          ("<module>", marks["module-call"], True)]
        assert threads[0].stop_reason == ""


@pytest.mark.parametrize("version", VERSIONS)
def test_frame_limit_ends_the_chain_with_a_reason(version):
    with stopped_python(pyenv_python(version), ["30"]) as process:
        runtime = find_runtime(process.memory, process.lookup(), max_frames=10)
        thread = runtime.threads()[0]
        assert "more than 10 frames" in thread.stop_reason
        assert [f.function for f in thread.frames[:2]] == ["leaf", "recurse"]
        assert len(thread.frames) <= 10


@pytest.mark.parametrize("version", VERSIONS)
def test_non_main_thread(version):
    with stopped_python(pyenv_python(version), ["3", "--thread"]) as process:
        runtime = find_runtime(process.memory, process.lookup())
        threads = {t.native_thread_id: t for t in runtime.threads()}
        assert sorted(threads) == process.task_ids()
        worker = threads[process.facts["native_id"]]
        main = threads[process.pid]
        assert worker.thread_id == process.facts["ident"]
        assert main.thread_id == process.facts["main_ident"]
        assert (worker.holds_gil, main.holds_gil) == (True, False)
        assert {worker.interpreter_id, main.interpreter_id} == {0}
        marks = process.marks
        mine = [f for f in worker.frames if f.filename == SCRIPT]
        # Thread.run calls self._target(*args, **kwargs): CALL_FUNCTION_EX, which 3.11
        # runs in a new eval loop and 3.12+ inline.
        assert summary(mine) == script_frames(marks, 3, "stop-thread") + [
            ("worker", marks["worker-call"], version.startswith("3.11."))]
        # Below the script: threading's Thread.run -> _bootstrap_inner -> _bootstrap, the
        # last one entered from C when the thread started.
        library = worker.frames[len(mine):]
        assert [f.function for f in library] == ["Thread.run", "Thread._bootstrap_inner",
                                                 "Thread._bootstrap"]
        assert [f.is_entry for f in library] == [False, False, True]
        assert all(f.filename.endswith("/threading.py") for f in library)
        assert "self._target(" in linecache.getline(library[0].filename, library[0].line)
        # The main thread waits in join(), in threading.py.
        assert [(f.function, f.line) for f in main.frames if f.filename == SCRIPT] == [
            ("main", marks["join"]), ("<module>", marks["module-call"])]
        assert main.frames[0].filename.endswith("/threading.py")
        assert "Thread.join" in [f.function for f in main.frames]
        for thread in (worker, main):
            check_common(thread)


@pytest.mark.parametrize("version", FREE_THREADED)
def test_free_threaded_threads_say_attached_or_detached(version):
    """3.13t/3.14t: no GIL holder; the worker (stopping the process from Python) is
    attached; 3.14t's worker runs its own copy of the bytecode, and its lines are still
    right."""
    with stopped_python(fixture_python(version), ["3", "--thread"]) as process:
        runtime = find_runtime(process.memory, process.lookup())
        assert runtime.layout.free_threaded
        threads = {t.native_thread_id: t for t in runtime.threads()}
        worker, main = threads[process.facts["native_id"]], threads[process.pid]
        assert (worker.holds_gil, main.holds_gil) == (None, None)
        # The worker stops the process once the main thread's Python frame is join's:
        # in a free-threaded build that thread may still run join's bytecode (attached)
        # or already wait for the lock (detached).
        assert worker.state == "attached" and main.state in ("attached", "detached")
        marks = process.marks
        mine = [f for f in worker.frames if f.filename == SCRIPT]
        assert summary(mine) == script_frames(marks, 3, "stop-thread") + [
            ("worker", marks["worker-call"], False)]
        assert [(f.function, f.line) for f in main.frames if f.filename == SCRIPT] == [
            ("main", marks["join"]), ("<module>", marks["module-call"])]
        for thread in (worker, main):
            check_common(thread)


@pytest.mark.parametrize("version", VERSIONS)
def test_generator_frame(version):
    with stopped_python(pyenv_python(version), ["3", "--generator"]) as process:
        thread, = read_python_threads(process.memory, process.lookup())
        marks = process.marks
        recursion = script_frames(marks, 3)[:-1]
        recursion[-1] = ("recurse", marks["recurse-call"], False)  # called by the generator
        assert summary(thread.frames) == recursion + [
            ("generate", marks["generator-call"], True),  # resumed by next(), from C
            ("through_generator", marks["next-call"], False),
            ("main", marks["generator-main-call"], False),
            ("<module>", marks["module-call"], True)]
        assert [f.owner for f in thread.frames] == ["thread"] * 4 + ["generator"] + [
            "thread"] * 3


@pytest.mark.parametrize("version", ["3.12.1", "3.13.0"])
def test_perf_trampolines_do_not_change_python_frames(version):
    with stopped_python(pyenv_python(version), ["3"], python_options=["-X", "perf"]) \
            as process:
        with open(f"/tmp/perf-{process.pid}.map") as handle:
            perf_map = handle.read()
        assert f"py::recurse:{SCRIPT}" in perf_map  # the trampolines are really there
        thread, = read_python_threads(process.memory, process.lookup())
        marks = process.marks
        expected = script_frames(marks, 3) + [("main", marks["main-call"], False),
                                              ("<module>", marks["module-call"], True)]
        # With perf trampolines no call is inlined: every Python frame is run by its own
        # _PyEval_EvalFrameDefault (called through its trampoline), so each is an entry.
        assert summary(thread.frames) == [(name, line, True) for name, line, _ in expected]
        assert len(thread.eval_loop_groups()) == len(thread.frames)


def test_cpython_3_10_is_not_supported():
    with stopped_python(pyenv_python("3.10.13"), ["3"]) as process:
        lookup = process.lookup()
        assert lookup("_PyRuntime") is not None and lookup("Py_Version") is None
        hint = version_from_library_name(str(process.library))
        assert hint == PyVersion(3, 10)
        with pytest.raises(UnsupportedVersionError) as caught:
            find_runtime(process.memory, lookup, version=hint)
        assert str(caught.value) == ("CPython 3.10 is not supported "
                                     "(jit-unwind reads CPython 3.11 and newer)")
        # Without a hint the message still says what is wrong, in one sentence.
        with pytest.raises(CPythonError, match="CPython before 3.11 is not supported"):
            find_runtime(process.memory, lookup)
        assert issubclass(UnsupportedVersionError, JitUnwindError)


def test_stripped_3_13_uses_only_debug_offsets(tmp_path):
    """A copy of 3.13 without symbol tables: _PyRuntime is found as the .PyRuntime
    section, the version and every offset come from _Py_DebugOffsets."""
    python = pyenv_python("3.13.0")
    prefix = python.parent.parent
    library = prefix / "lib" / "libpython3.13.so.1.0"
    for source in (python, library):
        copy = tmp_path / source.name
        shutil.copy2(source, copy)
        subprocess.run(["strip", "--strip-all", str(copy)], check=True)
    copy = tmp_path / library.name
    sections = subprocess.run(["readelf", "-SW", str(copy)], capture_output=True,
                              text=True, errors="replace", check=True).stdout
    assert ".symtab" not in sections and ".debug_info" not in sections
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), PYTHONHOME=str(prefix))
    with stopped_python(tmp_path / python.name, ["3"], env=env) as process:
        assert process.library == copy
        lookup = process.lookup(use_symbols=False)
        assert lookup("Py_Version") is None
        runtime = find_runtime(process.memory, lookup)
        assert str(runtime.version) == "3.13.0"
        assert runtime.layout.source.startswith("_Py_DebugOffsets")
        thread, = runtime.threads()
        marks = process.marks
        assert summary(thread.frames) == script_frames(marks, 3) + [
            ("main", marks["main-call"], False), ("<module>", marks["module-call"], True)]


def test_no_runtime_symbol_is_a_clear_error():
    with stopped_python(pyenv_python("3.12.1"), ["1"]) as process:
        with pytest.raises(CPythonError, match="no _PyRuntime symbol"):
            find_runtime(process.memory, lambda name: None)


def test_unreadable_frame_ends_the_chain_with_a_reason():
    """A memory that fails inside the frame chain: the frames read so far are kept."""
    with stopped_python(pyenv_python("3.13.0"), ["5"]) as process:
        runtime = find_runtime(process.memory, process.lookup())
        full, = runtime.threads()
        broken_at = full.frames[3].address

        class Holey(type(process.memory)):
            def read(self, address, size):
                if address <= broken_at < address + size:
                    from jit_unwind.target import MemoryReadError
                    raise MemoryReadError(address, size)
                return super().read(address, size)

        holey = Holey(process.pid)
        try:
            thread, = find_runtime(holey, process.lookup()).threads()
        finally:
            holey.close()
        assert thread.frames == full.frames[:3]
        assert thread.stop_reason == f"cannot read the frame at {broken_at:#x}"
