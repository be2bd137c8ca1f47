"""What ``core`` and ``attach`` share: the stack options, the ``py-mixed-bt`` command
they become, and turning the debugger's run into what the user sees and an exit
status."""

import re
import sys

from .color import colorize, wanted
from .debuggers import CHOICES, BatchResult, Debugger
from .errors import FAILED, OK

# The plugin's own messages on the debugger's stderr ("py-mixed-bt: ...", "jit-unwind: ...
# missing"), passed on to the user; the debugger's other chatter is not.
_PLUGIN_MESSAGE = re.compile(r"^(?:error: )?((?:py-mixed-bt|jit-unwind): .*)$", re.M)


def add_stack_options(parser) -> None:
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--native", action="store_true",
                       help="native frames with the Python frames each one runs (default)")
    shown.add_argument("--python-only", action="store_true",
                       help="only the Python frames, like py-bt (fast: no native unwinding)")
    shown.add_argument("--native-last", action="store_true",
                       help="every Python frame, but only the native frames below the "
                            "last one (what it is doing in C), as pystack's")
    parser.add_argument("--locals", action="store_true",
                        help="each Python frame's variables, where they can be read")
    parser.add_argument("--json", action="store_true",
                        help="one JSON document (py-mixed-bt's schema, "
                             "docs/py-mixed-bt.schema.json)")
    parser.add_argument("--no-color", action="store_true",
                        help="no color even on a terminal (also: NO_COLOR set)")
    parser.add_argument("--debugger", default="gdb", metavar=CHOICES,
                        help="gdb on PATH (default), gdb18 (this Python's gdb-for-pwndbg), "
                             "lldb, a debugger's path, or none (read the core or the "
                             "process here, no debugger needed)")


def mixed_bt_command(options) -> str:
    command = "py-mixed-bt --all-threads"
    if options.python_only:
        command += " --python-only"
    if options.native_last:
        command += " --native-last"
    if options.json:
        command += " --json"
    if options.locals:
        command += " --locals"
    return command


def report(result: BatchResult, options, debugger: Debugger, what: str) -> int:
    """Print the stack the debugger printed; the exit status: 1 when it printed none or
    found no Python frames."""
    messages = _PLUGIN_MESSAGE.findall(result.errors + result.output)
    output = result.output.strip("\n")
    if options.json:
        document = _document(output)
        if document is None:
            return _failed(messages, result, debugger, what)
        import json  # here: only --json needs it
        print(json.dumps(document, indent=2))
        has_python = any(thread.get("python") for thread in document.get("threads", []))
    else:
        stack = "\n".join(line for line in output.splitlines()
                          if not _PLUGIN_MESSAGE.match(line))
        if not re.search(r"^Thread \d+", stack, re.M):
            return _failed(messages, result, debugger, what)
        print(colorize(stack) if wanted(options.no_color, sys.stdout) else stack)
        has_python = "[py] " in stack
    for message in messages:
        print(message, file=sys.stderr)
    if not has_python:
        print(f"jit-unwind: no Python frames found in {what}", file=sys.stderr)
        return FAILED
    return OK


def _document(output: str):
    start = output.find("{")
    if start < 0:
        return None
    import json
    try:
        return json.JSONDecoder().raw_decode(output[start:])[0]
    except ValueError:
        return None


def _failed(messages, result: BatchResult, debugger: Debugger, what: str) -> int:
    """The debugger printed no stack: say why in one line (the plugin's message, else the
    debugger's last error line)."""
    if messages:
        reason = messages[-1]
    else:
        lines = [line for line in result.errors.splitlines() if line.strip()
                 and not line.startswith("warning:")]
        reason = lines[-1] if lines else f"exit status {result.status}"
    print(f"jit-unwind: {debugger.path} printed no stack for {what}: {reason}",
          file=sys.stderr)
    return FAILED
