"""The core over a fake debugger: the per-stop cache, one thread's walk with its marks,
and the commands' errors, with no debugger at all (what an LLDB adapter relies on)."""

import contextlib

import pytest

from jit_unwind.commands import CommandError
from jit_unwind.commands.jit_regions import jit_regions
from jit_unwind.commands.mixed_bt import py_mixed_bt
from jit_unwind.debugger import DebuggerError, Frame, Process, Thread
from jit_unwind.stack.frame_label import marks
from jit_unwind.model import EVAL, JIT, OTHER
from jit_unwind.model import Unwound
from jit_unwind.regions import Mapping
from jit_unwind.stop.cache import StopCache, StopCaches
from jit_unwind.stack.frames import walk
from jit_unwind.target import BytesMemory

JIT_START = 0x7000_0000
LIB_START = 0x4000_0000
STACK = 0x7FFF_0000
NO_SUCH_PID = 2 ** 22 + 17  # above pid_max: no /tmp/perf-PID.map


class FakeFrame(Frame):
    def __init__(self, level, pc, sp, name=None, older_error=None, stop_reason=""):
        self._level, self._pc, self._sp, self._name = level, pc, sp, name
        self.next = None
        self._older_error = older_error
        self._stop_reason = stop_reason

    level = property(lambda self: self._level)

    def pc(self):
        if self._pc is None:
            raise DebuggerError("PC not available")
        return self._pc

    def function_name(self):
        return self._name

    def source(self):
        return ("app.c", 10 + self._level) if self._name else None

    def register(self, name):
        return self._sp if name == "rsp" else None

    def interpreter_frame(self):
        return None

    def older(self):
        if self._older_error:
            raise DebuggerError(self._older_error)
        return self.next

    def stop_reason(self):
        return self._stop_reason


class FakeThread(Thread):
    def __init__(self, frames):
        self.number, self.native_id, self.name = 1, 4242, "app"
        self._frames = frames
        for inner, outer in zip(frames, frames[1:]):
            inner.next = outer

    def newest_frame(self):
        if not self._frames:
            raise DebuggerError("No stack.")
        return self._frames[0]


class FakeProcess(Process):
    debugger_name = "FakeDB"

    def __init__(self, pid=NO_SUCH_PID):
        self.memory = BytesMemory({})
        self._pid = pid
        self.lookups = 0
        self.warnings = []

    def pid(self):
        return self._pid

    def key(self):
        return (1, self._pid)

    def connection(self):
        return "remote"

    def core_file(self):
        return None

    def debugger_mappings(self):
        return [Mapping(LIB_START, LIB_START + 0x1000, "r-xp", "/usr/lib/libapp.so"),
                Mapping(JIT_START, JIT_START + 0x1000, "rwxp", ""),
                Mapping(STACK, STACK + 0x10000, "rw-p", "[stack]")]

    def module_paths(self):
        return []

    def threads(self):
        return []

    def selected_thread(self):
        return None

    def symbol_address(self, name):
        self.lookups += 1
        return None

    def member_offset(self, type_name, member_path):
        return None

    def function_start(self, address):
        return None

    def keep_selection(self):
        return contextlib.nullcontext()

    def warn(self, text):
        self.warnings.append(text)


def test_the_cache_lasts_one_stop():
    process = FakeProcess()
    cache = StopCache(process)
    regions = cache.regions()
    assert cache.has_jit and regions.jit_region_at(JIT_START + 4) is not None
    assert cache.regions() is regions
    cache.lookup_symbol("nothing_here")
    cache.lookup_symbol("nothing_here")
    assert process.lookups == 1  # once per stop
    cache.record(JIT_START + 4, STACK + 8, Unwound("stack-scan", LIB_START + 0x10,
                                                   STACK + 0x40, guess=True))
    cache.invalidate()
    assert cache.has_jit is None and not cache.unwound and not cache.guessed
    cache.lookup_symbol("nothing_here")
    assert process.lookups == 2
    assert cache.regions() is not regions


class NoJitProcess(FakeProcess):
    def debugger_mappings(self):
        return [mapping for mapping in super().debugger_mappings() if mapping.path or
                "x" not in mapping.perms]


def test_the_first_map_with_jit_code_calls_the_adapters_preparation_once():
    calls = []
    plain = StopCache(NoJitProcess(), on_first_jit=lambda: calls.append("plain"))
    plain.regions()
    plain.invalidate()
    plain.regions()
    assert calls == [] and plain.has_jit is False
    cache = StopCache(FakeProcess(), on_first_jit=lambda: calls.append("jit"))
    cache.regions()
    cache.regions()
    cache.invalidate()
    cache.regions()
    assert calls == ["jit"]


def test_another_process_drops_the_cache():
    process = FakeProcess()
    cache = StopCache(process)
    regions = cache.regions()
    process._pid += 1
    cache.check_process()
    assert cache.regions() is not regions


def test_the_walk_marks_guesses_and_where_the_unwinder_stopped():
    cache = StopCache(FakeProcess())
    frames = [FakeFrame(0, LIB_START + 0x20, STACK + 0x10, "callback"),
              FakeFrame(1, JIT_START + 0x30, STACK + 0x20),
              FakeFrame(2, LIB_START + 0x40, STACK + 0x80, "found_by_scan"),
              FakeFrame(3, JIT_START + 0x90, STACK + 0x100)]
    cache.regions()  # as the unwinder does before it records anything
    cache.record(JIT_START + 0x30, STACK + 0x20,
                 Unwound("stack-scan", LIB_START + 0x40, STACK + 0x80, guess=True))
    cache.record(JIT_START + 0x90, STACK + 0x100,
                 Unwound("frame-pointer", stop_reason="frame pointer chain broken"))
    natives, reason = walk(FakeThread(frames), cache)
    assert [n.kind for n in natives] == [OTHER, JIT, OTHER, JIT]
    assert [n.function for n in natives] == [
        "callback", f"[jit {JIT_START:#x}+0x30]", "found_by_scan", f"[jit {JIT_START:#x}+0x90]"]
    assert [n.guess for n in natives] == [False, False, True, False]
    assert natives[3].stop_reason == reason == "frame pointer chain broken"
    assert marks(natives[2]) == "[guess: found by stack scan]"
    assert marks(natives[3], show_method=True) == (
        "[via frame-pointer] [unwind stopped: frame pointer chain broken]")
    assert (natives[0].filename, natives[0].line) == ("app.c", 10)


def test_the_walk_ends_with_the_debuggers_reason():
    cache = StopCache(FakeProcess())
    natives, reason = walk(FakeThread([FakeFrame(0, LIB_START, STACK, "f"),
                                       FakeFrame(1, None, STACK + 8)]), cache)
    assert [n.name for n in natives] == ["f"] and reason == "PC not available"
    natives, reason = walk(FakeThread([FakeFrame(0, LIB_START, STACK, "f",
                                                 older_error="Cannot access memory")]), cache)
    assert len(natives) == 1 and reason == "Cannot access memory"
    natives, reason = walk(FakeThread([FakeFrame(0, LIB_START, STACK, "f",
                                                 stop_reason="previous frame identical")]),
                           cache)
    assert reason == "previous frame identical" and not natives[0].stop_reason
    assert walk(FakeThread([]), cache) == ([], "No stack.")


def test_an_eval_loop_frame_is_classified_as_such():
    cache = StopCache(FakeProcess())
    natives, _ = walk(FakeThread([FakeFrame(0, LIB_START, STACK, "_PyEval_EvalFrameDefault")]),
                      cache)
    assert natives[0].kind == EVAL


def test_command_errors_carry_the_users_message():
    with pytest.raises(CommandError, match=r'^py-mixed-bt: unrecognized arguments: --bogus\. '
                                           r'Try "help py-mixed-bt"\.$'):
        py_mixed_bt(FakeProcess(), StopCache(FakeProcess()), ["--bogus"])
    process = FakeProcess(pid=None)
    with pytest.raises(CommandError, match="^py-mixed-bt: no process: run a program"):
        py_mixed_bt(process, StopCache(process), [])
    with pytest.raises(CommandError, match="^No process: run a program"):
        jit_regions(process, StopCache(process), "")
    with pytest.raises(CommandError, match="^info jit-regions: no option --x. Usage: "):
        jit_regions(process, StopCache(process), "--x")
    process = FakeProcess()
    with pytest.raises(CommandError, match="^info jit-regions: 'x' is no address.$"):
        jit_regions(process, StopCache(process), "x")


def test_jit_regions_lists_the_anonymous_executable_mapping():
    process = FakeProcess()
    assert f"{JIT_START:#x}" in jit_regions(process, StopCache(process), "")


def test_py_mixed_bt_lists_the_native_frames_of_a_program_without_python():
    """No CPython in the process: the native frames alone, python_version null; a
    process one cannot tell apart from CPython (--python-only) still gets the error."""
    import json

    frames = [FakeFrame(0, LIB_START + 0x10, STACK + 0x100, "leaf"),
              FakeFrame(1, JIT_START + 0x20, STACK + 0x200),
              FakeFrame(2, LIB_START + 0x30, STACK + 0x300, "main")]

    class Single(FakeProcess):
        def selected_thread(self):
            return FakeThread(frames)

    process = Single()
    document = json.loads(py_mixed_bt(process, StopCache(process), ["--json"]))
    assert document["python_version"] is None
    thread = document["threads"][0]
    assert thread["python"] == [] and thread["holds_gil"] is None
    assert [(f["function"], f["kind"]) for f in thread["frames"]] == [
        ("leaf", "other"), (f"[jit {JIT_START:#x}+0x20]", "jit"), ("main", "other")]
    assert "[no Python]" in py_mixed_bt(process, StopCache(process), [])
    with pytest.raises(CommandError, match="^py-mixed-bt: "):
        py_mixed_bt(process, StopCache(process), ["--python-only"])


def test_one_stop_cache_per_process():
    caches = StopCaches()
    first = caches.get("a", FakeProcess)
    assert caches.get("a", FakeProcess) is first
    assert caches.get("b", FakeProcess) is not first
    first.per_stop("walk", lambda: [1])
    assert first.known("walk") == [1] and first.known("other") is None


def test_after_a_resume_native_code_is_known_until_the_map_is_rebuilt():
    cache = StopCache(FakeProcess())
    assert not cache.known_native(LIB_START + 0x10)  # nothing known before a first stop
    cache.regions()
    cache.resumed()
    assert cache.has_jit is None and not cache.unwound
    assert cache.known_native(LIB_START + 0x10)
    assert not cache.known_native(JIT_START + 0x10)  # JIT code: the unwinder rebuilds
    cache.resumed()  # a second step without a stop that needed the map
    assert cache.known_native(LIB_START + 0x10)
    cache.regions()
    assert not cache.known_native(LIB_START + 0x10)  # the fresh map answers now
    cache.resumed()
    cache.invalidate()  # an object file loaded or freed: nothing is known
    assert not cache.known_native(LIB_START + 0x10)


def test_a_process_that_cannot_run_python_is_not_searched_for_its_runtime():
    """bt's question (Python frames of this thread? CPython's JIT executors?) on a JIT
    process with no file named like CPython and none exporting _PyRuntime or holding
    .PyRuntime: no look-up through the debugger's symbols.  py-mixed-bt still asks for
    the runtime (and says why there is none)."""
    process = FakeProcess()
    cache = StopCache(process)
    assert not cache.may_run_python()
    assert cache.python_thread(1) is None and cache.jit_code_regions() == []
    assert process.lookups == 0
    runtime, reason = cache.python_runtime()
    assert runtime is None and reason and process.lookups >= 1


def test_a_file_named_like_cpython_may_run_python():
    class PythonProcess(FakeProcess):
        def debugger_mappings(self):
            return [*super().debugger_mappings(),
                    Mapping(LIB_START + 0x10000, LIB_START + 0x11000, "r-xp",
                            "/opt/lib/libpython3.14.so.1.0")]

    cache = StopCache(PythonProcess())
    assert cache.may_run_python()


class _ProcessMappingAJitdump(FakeProcess):
    def __init__(self, dump_path):
        super().__init__()
        self.dump_path = dump_path

    def debugger_mappings(self):
        return super().debugger_mappings() + [
            Mapping(0x5000_0000, 0x5000_1000, "r--p", self.dump_path)]


def test_the_jitdump_reader_is_imported_only_for_a_process_with_a_dump_file(
        tmp_path, monkeypatch):
    """Most JIT processes write no jitdump: their named regions are read without the
    dump's reader (each module imported is part of the first bt's time); the dump of a
    process that maps one is read."""
    import struct
    import sys
    reader = "jit_unwind.regions.jitdump_process"
    monkeypatch.delitem(sys.modules, reader, raising=False)
    cache = StopCache(FakeProcess())
    assert cache.named_regions().jit_region_at(JIT_START + 4) is not None
    assert reader not in sys.modules and not cache.problem

    dump = tmp_path / f"jit-{NO_SUCH_PID}.dump"
    dump.write_bytes(struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, NO_SUCH_PID, 0, 0))
    cache = StopCache(_ProcessMappingAJitdump(str(dump)))
    cache.named_regions()
    assert reader in sys.modules
    assert cache.jitdump().path == str(dump) and not cache.problem
