"""The one frame label (bt in GDB and LLDB, lldb-19's frame-format, py-mixed-bt) and the
one "decorate this thread?" gate, on the core's records: no debugger."""

from jit_unwind.model import PyFrame
from jit_unwind.stack.decoration_gate import (needs_decorating, stack_runs_jit_code,
                                        thread_needs_decorating, walk_kept_inputs)
from jit_unwind.stack.frame_label import (BOTH_GUESSED, CALLER_GUESSED, UNREADABLE, Label, bt_label,
                                    format_name, listed_label, may_have_label,
                                    python_line, python_name, unnamed_jit_name)
from jit_unwind.model import Unwound
from jit_unwind.stop.cache import StopCache
from jit_unwind.stack.frames import describe

from .test_session import JIT_START, LIB_START, STACK, FakeFrame, FakeProcess, FakeThread

JIT_PC = JIT_START + 0x10
NATIVE_PC = LIB_START + 0x20
GUESS = "[guess: found by stack scan]"


def _cache():
    cache = StopCache(FakeProcess())
    cache.regions()  # this stop's regions first: a new region map forgets unwinding
    return cache


def test_native_frame_has_no_label():
    cache = _cache()
    frame = FakeFrame(1, NATIVE_PC, STACK + 0x100, "main")
    assert not may_have_label(NATIVE_PC, cache)
    assert bt_label(frame, NATIVE_PC, cache, show_method=True) is None


def test_jit_frame_is_named_from_its_region_with_our_unwinder_marks():
    cache = _cache()
    frame = FakeFrame(0, JIT_PC, STACK + 0x100)
    cache.record(JIT_PC, STACK + 0x100, Unwound("frame-pointer", stop_reason="bad rbp"))
    label = bt_label(frame, JIT_PC, cache, show_method=False)
    assert may_have_label(JIT_PC, cache)
    assert label == Label(f"[jit {JIT_START:#x}+0x10]", "[unwind stopped: bad rbp]")
    shown = bt_label(frame, JIT_PC, cache, show_method=True).text()
    assert shown == (f"[jit {JIT_START:#x}+0x10] [via frame-pointer] "
                     "[unwind stopped: bad rbp]")


def test_guessed_native_caller_keeps_the_debuggers_name():
    """GDB marks the guessed caller itself; its name stays the debugger's."""
    cache = _cache()
    cache.record(JIT_PC, STACK + 0x100, Unwound(
        "stack-scan", caller_pc=NATIVE_PC, caller_sp=STACK + 0x200, guess=True))
    caller = FakeFrame(1, NATIVE_PC, STACK + 0x200, "helper")
    label = bt_label(caller, NATIVE_PC, cache, show_method=False)
    assert label.name is None
    assert label.text(lambda: "helper") == f"helper {GUESS}"


def test_lldb_marks_a_guessed_native_caller_on_the_jit_frame():
    """LLDB names native callers itself: the guess and a core's missing code are said
    on the JIT frame, before our unwinder's marks, and an unnamed frame gets a name."""
    cache = _cache()
    cache.record(JIT_PC, STACK + 0x100, Unwound(
        "stack-scan", caller_pc=NATIVE_PC, caller_sp=STACK + 0x200, guess=True))
    frame = FakeFrame(0, JIT_PC, STACK + 0x100)
    label = bt_label(frame, JIT_PC, cache, False, unnamed_jit_name(JIT_PC),
                     unreadable=True, mark_caller_guess=True)
    assert label.marks == f"{CALLER_GUESSED} {UNREADABLE}"
    assert bt_label(frame, JIT_PC, cache, False).marks == ""  # GDB: on the caller
    outside = FakeFrame(3, NATIVE_PC, STACK + 0x300)
    assert bt_label(outside, NATIVE_PC, cache, False, unnamed_jit_name(NATIVE_PC),
                    unreadable=True) == Label(f"[jit {NATIVE_PC:#x}]", UNREADABLE)


def test_lldb_says_once_that_a_frame_and_its_caller_were_guessed():
    """A JIT frame found by stack scan whose native caller was found so too: one mark
    says both (two read as the same mark twice)."""
    cache = _cache()
    cache.record(NATIVE_PC + 0x40, STACK + 0x80, Unwound(
        "stack-scan", caller_pc=JIT_PC, caller_sp=STACK + 0x100, guess=True))
    cache.record(JIT_PC, STACK + 0x100, Unwound(
        "stack-scan", caller_pc=NATIVE_PC, caller_sp=STACK + 0x200, guess=True))
    frame = FakeFrame(1, JIT_PC, STACK + 0x100)
    label = bt_label(frame, JIT_PC, cache, False, unnamed_jit_name(JIT_PC),
                     mark_caller_guess=True)
    assert label.marks == BOTH_GUESSED
    assert bt_label(frame, JIT_PC, cache, False).marks == GUESS  # GDB: each on its own


def test_py_mixed_bt_label_from_describe():
    """py-mixed-bt's record says "no caller found" where our unwinder ended the walk
    without a reason; a frame without a name shows its pc and, as GDB's bt, the file
    mapped there."""
    cache = _cache()
    cache.record(JIT_PC, STACK + 0x100, Unwound("none"))
    listed = listed_label(describe(FakeFrame(0, JIT_PC, STACK + 0x100), cache), True)
    assert listed.text() == (f"[jit {JIT_START:#x}+0x10] [via none] "
                             "[unwind stopped: no caller found]")
    unnamed = describe(FakeFrame(2, NATIVE_PC, STACK + 0x300), cache)
    assert listed_label(unnamed, False).text() == \
        f"{NATIVE_PC:#x} in ?? () from /usr/lib/libapp.so"
    unnamed.library = None  # no file known there: the pc alone
    assert listed_label(unnamed, False).text() == f"{NATIVE_PC:#x}"


def test_python_frame_lines():
    frame = PyFrame(0x1000, "compute", "/app/main.py", 12, False, "thread", 0, 0)
    assert python_name(frame) == "[py] compute"
    assert python_line(frame) == "[py] compute (/app/main.py:12)"


def test_frame_format_names_jit_frames_only():
    cache = _cache()
    assert format_name(cache, JIT_PC, innermost=True) == f"[jit {JIT_START:#x}+0x10]"
    assert format_name(cache, JIT_START, innermost=False) is None  # pc - 1: not JIT
    assert format_name(cache, NATIVE_PC, innermost=True) is None
    # Only code LLDB's JIT loader knows (none here): the frame provider names the rest.
    assert format_name(cache, JIT_PC, True, registered_only=True) is None


def _stack(*frames):
    FakeThread(list(frames))
    return frames[0]


def _through_jit(cache):
    """A stack whose frame 1 runs JIT code our unwinder unwound (GDB asked it about that
    frame when it made it)."""
    cache.record(JIT_PC, STACK + 8, Unwound("frame-pointer", caller_pc=NATIVE_PC + 8,
                                            caller_sp=STACK + 0x20))
    return _stack(FakeFrame(0, NATIVE_PC, STACK), FakeFrame(1, JIT_PC, STACK + 8))


def test_gate_walks_the_debuggers_frames_once_per_stop():
    cache = _cache()
    native = _stack(FakeFrame(0, NATIVE_PC, STACK), FakeFrame(1, NATIVE_PC + 8, STACK + 8))
    assert not stack_runs_jit_code(cache, 1, lambda: native)
    through_jit = _through_jit(cache)
    assert stack_runs_jit_code(cache, 2, lambda: through_jit)
    assert not stack_runs_jit_code(cache, 1, lambda: through_jit)  # remembered


def test_gate_leaves_the_debuggers_own_frames_and_messages_alone():
    """Unnamed JIT code our unwinder left to GDB (its stack cannot be read: GDB says
    so), and walks that end on an error, print as plain GDB prints them: a frame filter
    would drop GDB's "Backtrace stopped: ..." line (gdb.base/jit-reader.exp)."""
    cache = _cache()
    left = _stack(FakeFrame(0, JIT_PC, STACK, stop_reason="Cannot access memory"))
    assert not stack_runs_jit_code(cache, 1, lambda: left)
    stopped = _stack(FakeFrame(0, NATIVE_PC, STACK, stop_reason="Cannot access memory"))
    assert not stack_runs_jit_code(cache, 2, lambda: stopped)
    broken = _stack(FakeFrame(0, NATIVE_PC, STACK, older_error="corrupt stack"))
    assert not stack_runs_jit_code(cache, 3, lambda: broken)


def test_gate_decides_from_jit_code_python_and_show_method():
    cache = _cache()  # a process with JIT code
    def no():
        return False

    def yes():
        return True

    assert not needs_decorating(cache, no, no)
    assert needs_decorating(cache, yes, no)
    assert needs_decorating(cache, no, yes)
    assert needs_decorating(cache, no)  # not walked yet: it may
    assert needs_decorating(cache, no, no, always=True)


def test_selected_threads_gate():
    """GDB's filter asks for the selected thread: its stack through JIT code, else
    Python frames (none in the fake process), always with show-method."""
    cache = _cache()
    native = _stack(FakeFrame(0, NATIVE_PC, STACK), FakeFrame(1, NATIVE_PC + 8, STACK + 8))
    through_jit = _through_jit(cache)
    assert not thread_needs_decorating(cache, lambda: 1, lambda: native, False)
    assert thread_needs_decorating(cache, lambda: 2, lambda: through_jit, False)
    assert not thread_needs_decorating(cache, lambda: None, lambda: through_jit, False)
    assert thread_needs_decorating(cache, lambda: None, lambda: native, True)


class _Step:
    def __init__(self, index):
        self.index = index


def test_walk_kept_inputs():
    assert walk_kept_inputs([_Step(0), _Step(1)], 2)
    assert not walk_kept_inputs([_Step(0), _Step(None), _Step(1)], 2)
    assert not walk_kept_inputs([_Step(0)], 2)


def test_adapters_build_no_label_strings():
    """Names, marks and [py] frames come from frame_label: no adapter code (comments and
    help texts aside) spells a mark or calls frames.marks itself."""
    import ast
    from pathlib import Path
    package = Path(__file__).resolve().parents[2] / "plugin" / "jit_unwind"
    spelled = ("[py]", "[guess", "[unwind stopped", "[via ", "[jit ", "[its ")
    offenders = []
    for path in [*(package / "gdb").glob("*.py"), *(package / "lldb").glob("*.py")]:
        if path.stem == "settings":  # the settings' help texts describe the marks
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings \
                    and any(mark in node.value for mark in spelled):
                offenders.append(f"{path.name}: {node.value!r}")
            if isinstance(node, ast.Name) and node.id in ("marks", "jit_label"):
                offenders.append(f"{path.name}: uses {node.id}")
    assert not offenders
