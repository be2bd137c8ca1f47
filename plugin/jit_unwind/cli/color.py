"""Color for the text stack on a terminal, as pystack colors its own: only when stdout
is a terminal, NO_COLOR is unset or empty (no-color.org) and --no-color not given.
The debugger's output is captured through a pipe with its styling off, so the escape
codes are ours alone and never reach a file or a pipe."""

import os
import re

BOLD, GREEN, YELLOW, MAGENTA, RESET = "\x1b[1m", "\x1b[32m", "\x1b[33m", "\x1b[35m", "\x1b[0m"

_HEADING = re.compile(r"^Thread \d+ .*:$")
# "     [py] NAME (" and "#N   [jit] NAME" / "#N   NAME at": the tag and the function name.
_PYTHON = re.compile(r"^(\s+)(\[py\]) (\S+)")
_NATIVE = re.compile(r"^(#\d+\s+)(\[[^\]]+\] )?(\S+)")


def wanted(no_color: bool, stream) -> bool:
    if no_color or os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def _line(line: str) -> str:
    if _HEADING.match(line):
        return f"{BOLD}{line}{RESET}"
    matched = _PYTHON.match(line)
    if matched:
        indent, tag, name = matched.groups()
        return f"{indent}{GREEN}{tag} {name}{RESET}{line[matched.end():]}"
    matched = _NATIVE.match(line)
    if matched:
        number, tag, name = matched.groups()
        tag = f"{MAGENTA}{tag.rstrip()}{RESET} " if tag else ""
        return f"{number}{tag}{YELLOW}{name}{RESET}{line[matched.end():]}"
    return line


def colorize(text: str) -> str:
    """``py-mixed-bt``'s text with thread headings bold, Python frames green, native
    function names yellow and JIT tags ([jit], [jit shim], ...) magenta."""
    return "\n".join(_line(line) for line in text.split("\n"))
