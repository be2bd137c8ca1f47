"""``jit-regions`` and ``py-mixed-bt`` for LLDB (``command script add -c``)."""

import argparse
import shlex

import lldb

from ..cpython.thread_names import read_thread_names
from ..render import region_table
from ..render_mixed import render_text, to_json
from .python import add_runtime_regions, mixed_threads, python_runtime
from .registration import ensure_provider
from .state import region_map


def long_help(doc: str) -> str:
    """A docstring as LLDB's help shows it well: LLDB wraps lines itself, so each
    paragraph, and each option with its description, becomes one line."""
    paragraphs = []
    for paragraph in doc.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if lines and lines[0].startswith("  -"):  # an option list
            options = []
            for line in lines:
                if line.startswith("  -") or not options:
                    options.append(line.rstrip())
                else:
                    options[-1] += " " + line.strip()
            paragraphs.append("\n".join(options))
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def _process(exe_ctx, result):
    process = exe_ctx.GetProcess()
    if not process.IsValid() or process.GetProcessID() in (0, lldb.LLDB_INVALID_PROCESS_ID):
        result.SetError("No process: launch a program or load a core file first.")
        return None
    ensure_provider(exe_ctx.GetTarget())
    return process


class JitRegions:
    """List the JIT code regions of the current process.

Usage: jit-regions

Shows anonymous executable mappings (from /proc/PID/maps for a live process, from the
load segments of a core file) and entries of the perf map /tmp/perf-PID.map, one row
each: start, end, size, source and name."""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "List the JIT code regions of the current process."

    def get_long_help(self):
        return long_help(self.__doc__)

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            if command.strip():
                result.SetError("jit-regions takes no arguments.")
                return
            process = _process(exe_ctx, result)
            if process is None:
                return
            regions, problem = region_map(process)
            if regions.has_jit():
                add_runtime_regions(exe_ctx.GetTarget(), process, regions)
            if problem:
                result.AppendMessage(f"warning: {problem}")
            result.AppendMessage(region_table(regions.listing()))
            from .symfile import report; report(exe_ctx.GetTarget(), regions, result)
        except Exception as error:  # never a traceback
            result.SetError(f"jit-regions: cannot list the JIT regions: {error}")


class _ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _ParseError(f"py-mixed-bt: {message}. Try \"help py-mixed-bt\".")


PARSER = _Parser(prog="py-mixed-bt", add_help=False)
PARSER.add_argument("--all-threads", "-a", action="store_true")
PARSER.add_argument("--json", action="store_true")
PARSER.add_argument("--python-only", "-p", action="store_true")


class PyMixedBt:
    """Print the mixed native and Python stack of the selected thread.

Usage: py-mixed-bt [--all-threads] [--json] [--python-only]

Each native frame is followed by the Python frames it is running (function, file and
line), indented and marked [py]; JIT frames are named as in "bt".  Only memory is read:
nothing runs in the program, so this works on core files too.

  --all-threads, -a   every thread, with its Python thread name and which one holds
                      the GIL
  --json              one JSON document (schema: docs/py-mixed-bt.schema.json)
  --python-only, -p   only the Python frames, like py-bt; fast, no native unwinding"""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "Print the mixed native and Python stack of the selected thread."

    def get_long_help(self):
        return long_help(self.__doc__)

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            options = PARSER.parse_args(shlex.split(command))
            process = _process(exe_ctx, result)
            if process is None:
                return
            target = exe_ctx.GetTarget()
            runtime, reason = python_runtime(target, process)
            if runtime is None:
                result.SetError(f"py-mixed-bt: {reason}")
                return
            selected = process.GetSelectedThread()
            threads = list(process) if options.all_threads else [selected]
            try:
                names = read_thread_names(runtime)
            except Exception:  # names are a bonus
                names = {}
            mixed = mixed_threads(target, process, runtime, threads, options.python_only,
                                  names)
            if options.json:
                result.AppendMessage(to_json(mixed, str(runtime.version), options.python_only))
            else:
                result.AppendMessage(render_text(mixed, options.python_only))
        except _ParseError as error:
            result.SetError(str(error))
        except Exception as error:  # never a traceback
            result.SetError(f"py-mixed-bt: {error}")


def add_commands(debugger) -> None:
    interpreter = debugger.GetCommandInterpreter()
    for name, cls in (("jit-regions", "JitRegions"), ("py-mixed-bt", "PyMixedBt")):
        result = lldb.SBCommandReturnObject()
        interpreter.HandleCommand(
            f"command script add -o -c jit_unwind.lldb.commands.{cls} {name}", result)
        if not result.Succeeded():
            raise RuntimeError(f"cannot add {name}: {result.GetError()}")
