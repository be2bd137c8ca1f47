"""Reading Python frames out of GDB's output, and what the fixture scripts should show."""

import re
from pathlib import Path
from typing import Dict, List, Tuple

from tests.support import REPO

SCRIPTS = REPO / "tests" / "fixtures" / "python"
RECURSE = SCRIPTS / "recurse_sigtrap.py"

# "    [py] recurse () at /path/file.py:8" (bt) or "     [py] recurse (/path/file.py:8)"
_BT_PY = re.compile(r"^\s+\[py\] (\S+) \(\) at (.+):(\d+)$")
_MIXED_PY = re.compile(r"^\s+\[py\] (\S+) \((.+):(\d+)\)$")
_NATIVE = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)")

PyEntry = Tuple[str, str, int]


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
