"""Reading Python frames out of GDB's output, and what the fixture scripts should show."""

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tests.jit_python import INTERPRETERS, MINORS, fixture_python
from tests.support import REPO, pyenv_python

SCRIPTS = REPO / "tests" / "fixtures" / "python"
RECURSE = SCRIPTS / "recurse_sigtrap.py"

# "    [py] recurse () at /path/file.py:8" (bt) or "     [py] recurse (/path/file.py:8)"
_BT_PY = re.compile(r"^\s+\[py\] (\S+) \(\) at (.+):(\d+)$")
_MIXED_PY = re.compile(r"^\s+\[py\] (\S+) \((.+):(\d+)\)$")
_NATIVE = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)")
# "#7  0x00007ffff7a26ee6 in py::recurse:/path/file.py ()": a perf trampoline in bt
_TRAMPOLINE = re.compile(r"^#(\d+)\s+0x[0-9a-f]+ in py::([^:]+):(.+) \(\)$")

PyEntry = Tuple[str, str, int]

# The test interpreters of tests/jit_python.py by full version ("3.14.6" -> "3.14"),
# read from their directory names ("cpython-3.14.6-jit-x86_64-linux").
FIXTURE_VERSIONS = {INTERPRETERS[minor][0].split("-")[1]: minor for minor in MINORS}


def python_of(version: str) -> Path:
    """The interpreter of CPython ``version``: a test interpreter of tests/jit_python.py
    ("3.14.6", "3.15.0rc2") or else pyenv's ("3.12.1")."""
    if version in FIXTURE_VERSIONS:
        return fixture_python(FIXTURE_VERSIONS[version])
    return pyenv_python(version)


def marks(script: Path) -> Dict[str, int]:
    """``{name: line}`` of the ``# MARK: name`` comments of a script."""
    found = {}
    for number, text in enumerate(script.read_text().splitlines(), start=1):
        match = re.search(r"# MARK: ([\w-]+)", text)
        if match:
            found[match.group(1)] = number
    return found


def expected_recursion(depth: int) -> List[PyEntry]:
    lines = marks(RECURSE)
    file = str(RECURSE)
    return ([("recurse", file, lines["stop"])] + [("recurse", file, lines["call"])] * depth
            + [("<module>", file, lines["module"])])


def python_frames_with_parents(output: str, mixed: bool = False) -> List[Tuple[PyEntry, str]]:
    """Each Python frame of the last backtrace, with the native frame it is listed under."""
    pattern = _MIXED_PY if mixed else _BT_PY
    result: List[Tuple[PyEntry, str]] = []
    parent = None
    for line in output.splitlines():
        native = _NATIVE.match(line)
        if native:
            if native.group(1) == "0":
                result = []
            parent = native.group(2)
            continue
        match = pattern.match(line)
        if match:
            result.append(((match.group(1), match.group(2), int(match.group(3))), parent))
    return result


Trampoline = Tuple[Tuple[str, str], Optional[PyEntry]]


def trampolines_with_python_frames(output: str) -> List[Trampoline]:
    """Each perf trampoline of the last bt as (function, file), with the Python frame
    listed last before it (the one the eval loop above the trampoline runs), or None."""
    result: List[Trampoline] = []
    python: Optional[PyEntry] = None
    for line in output.splitlines():
        trampoline = _TRAMPOLINE.match(line)
        if trampoline:
            if trampoline.group(1) == "0":
                result, python = [], None
            result.append(((trampoline.group(2), trampoline.group(3)), python))
            continue
        native = _NATIVE.match(line)
        if native and native.group(1) == "0":
            result, python = [], None
        match = _BT_PY.match(line)
        if match:
            python = (match.group(1), match.group(2), int(match.group(3)))
    return result
