"""``py-mixed-bt``: the mixed native + Python stack, compact, as text or JSON."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, List, Tuple, cast

from ..debugger import Process, Thread
from ..stop.cache import StopCache
from ..target import JitUnwindError
from . import settings
from . import CommandError
from .registry import STACK, Command, declare, provenance

# The walk, the merge and the rendering are imported when the command first runs:
# registering it (its help) should cost the debugger's start-up little.
if TYPE_CHECKING:
    from ..model import MixedThread

HELP = """Print the mixed native and Python stack of the selected thread.

Usage: py-mixed-bt [--all-threads] [--json] [--python-only | --native-last] [--locals]

Each native frame is followed by the Python frames it is running (function, file and
line), indented and marked [py]; JIT frames are named and marked as in "bt".  In a
program without CPython, the native frames alone.  Only memory is read: nothing runs in
the program, so this works on core files too.

  --all-threads, -a   every thread, with its Python thread name and which one holds
                      the GIL (free-threaded builds: whether each one is attached)
  --json              one JSON document (schema: docs/py-mixed-bt.schema.json)
  --python-only, -p   only the Python frames, like py-bt; fast, no native unwinding
  --locals            under each Python frame its variables, "name = value" (a short
                      repr of None, bool, int, float, str, bytes; <TYPE at 0x...>
                      for other objects)
  --native-last       every Python frame, but only the native frames below the last
                      (innermost) one, as pystack's --native-last: what the Python
                      code is doing in C; outer frames are listed only where they
                      run Python frames"""

_PARSER: list = []


def parser():
    """The options' parser, made on first use (argparse's help formatter pulls in
    shutil and locale: milliseconds of the debugger's start-up otherwise)."""
    if not _PARSER:
        from . import Parser
        made = Parser(prog="py-mixed-bt", add_help=False)
        made.add_argument("--all-threads", "-a", action="store_true")
        made.add_argument("--json", action="store_true")
        shown = made.add_mutually_exclusive_group()
        shown.add_argument("--python-only", "-p", action="store_true")
        shown.add_argument("--native-last", action="store_true")
        made.add_argument("--locals", action="store_true")
        _PARSER.append(made)
    return _PARSER[0]


# Each flag and the option it sets: what argv made of these alone means, read without
# argparse (its import and a parser's help formatter are ~10 ms of a one-shot run such
# as the jit-unwind command's); anything else (an error, an abbreviation) goes through
# the parser, for its messages.
_FLAGS = {"--all-threads": "all_threads", "-a": "all_threads", "--json": "json",
          "--python-only": "python_only", "-p": "python_only",
          "--native-last": "native_last", "--locals": "locals"}


def parse(argv: List[str]):
    """py-mixed-bt's options from ``argv``; CommandError for arguments it does not take."""
    if all(arg in _FLAGS for arg in argv):
        options = {name: False for name in _FLAGS.values()}
        options.update((_FLAGS[arg], True) for arg in argv)
        if not (options["python_only"] and options["native_last"]):
            return SimpleNamespace(**options)
    return parser().parse_args(argv)


def _mixed_thread(thread: Thread, cache: StopCache, options, names,
                  with_locals=None, not_dumped: bool = False) -> MixedThread:
    """``not_dumped``: the interpreter's memory is not in the minidump (no Python)."""
    from ..stack.mixed import mix, native_last
    from ..model import MixedThread
    from ..stack.frames import walk
    try:
        python = None if not_dumped else cache.python_thread(thread.native_id)
    except JitUnwindError:  # memory the runtime's structures need is unreadable: native only
        python = None
    if python is not None and with_locals is not None:
        python = with_locals(python)
    mixed = MixedThread(thread.number, thread.native_id, thread.name, python,
                        names.get(python.thread_id) if python is not None else None,
                        python_missing=not_dumped)
    if not options.python_only:
        natives, mixed.stop_reason = walk(thread, cache)
        mixed.frames = mix(natives, python)
        if options.native_last:
            mixed.frames = native_last(mixed.frames)
    return mixed


def _locals_adder(runtime):
    """What gives a PyThread its frames' variables (``--locals``)."""
    from ..cpython.locals import reader_for, with_locals
    reader, reason = reader_for(runtime)
    return lambda python: with_locals(reader, python, reason)


def py_mixed_bt(process: Process, cache: StopCache, argv: List[str],
                show_method: bool = False) -> str:
    """The text (or JSON) ``py-mixed-bt argv`` prints; CommandError when it cannot run."""
    from ..cpython.thread_names import read_thread_names
    from .render_mixed import render_text, to_json
    options = parse(argv)
    if process.pid() is None:
        raise CommandError("py-mixed-bt: no process: run a program or load a core file first.")
    from ..regions.core_notes import missing_executable, truncation
    # A core without its executable: the debugger's native frames are stack words, so
    # only the Python stack, after the note saying how to give the executable.
    no_executable = missing_executable(process)
    if no_executable:
        options.python_only = True
    from ..regions.minidump import missing_code, missing_runtime
    # A minidump without the interpreter's memory (its threads' stacks only): the
    # native frames, and what is missing for the Python ones, never the file's bytes.
    not_dumped = missing_runtime(process, lambda: cache.lookup_symbol("_PyRuntime",
                                                                      debug_info=False))
    runtime, reason = (None, not_dumped) if not_dumped else cache.python_runtime()
    truncated = truncation(process, lambda: cache.lookup_symbol("_PyRuntime",
                                                                debug_info=False))
    if no_executable:  # the cause of what the runtime seemed to say, as a truncation
        truncated = ("; ".join(filter(None, [no_executable, truncated[0]])),
                     truncated[1] or runtime is None)
    if runtime is None and (options.python_only or cache.is_python_process()) \
            and not (not_dumped and not options.python_only):
        raise CommandError(f"py-mixed-bt: {_with_cause(truncated, reason, bool(no_executable))}")
    with process.keep_selection():
        threads = process.threads() if options.all_threads else [process.selected_thread()]
        names = read_thread_names(runtime) if runtime is not None else {}  # never raises
        add_locals = _locals_adder(runtime) if options.locals and runtime else None
        mixed = [_mixed_thread(thread, cache, options, names, add_locals, bool(not_dumped))
                 for thread in threads if thread is not None]
    # Without a runtime, say why (e.g. libpython is not loaded yet at `starti`).
    note = runtime.lifecycle_note() if runtime is not None else reason  # never raises
    note = _with_cause(truncated, note)
    from ..model import JIT
    code_missing = missing_code(process, [frame.native.pc for thread in mixed
                                          for frame in thread.frames
                                          if frame.native.kind == JIT and frame.native.pc])
    note = "; ".join(filter(None, [note, code_missing]))
    if options.json:
        return to_json(mixed, str(runtime.version) if runtime is not None else None,
                       options.python_only, note)
    text = render_text(mixed, options.python_only, show_method)
    return f"note: {note}\n{text}" if note else text


def _with_cause(cause: Tuple[str, bool], why: str, refusing: bool = False) -> str:
    """The core's problem first (it is the cause), then what it led to; what CPython's
    runtime seemed to say is no news when its bytes are missing (``cause[1]``), and
    nothing needs adding when the command refuses for the cause itself."""
    text, runtime_lost = cause
    if text and runtime_lost:
        return text if refusing else f"{text} (so: no Python frames)"
    if text and why:
        return f"{text} (so: {why})"
    return text or why


def _help(debugger: str) -> str:
    return HELP + provenance(debugger)


declare(Command(
    names={"gdb": "py-mixed-bt", "lldb": "py-mixed-bt"}, help=_help, split=True,
    category=STACK,
    # (needs_process: the adapters run it with a process and its cache)
    run=lambda context, argv: py_mixed_bt(cast(Process, context.process),
                                          cast(StopCache, context.cache), argv,
                                          settings.value("show-method"))))
