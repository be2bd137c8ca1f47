"""Where the CPython test interpreters live (made by tests/fixtures/build_cpython.sh).

Each is unpacked from ``../shared/cpython`` when that archive is there, else built from
Debian's source package, into ``~/.cache/jit-unwind/<name>`` (``JIT_UNWIND_CACHE``).
The JIT builds have the JIT built but off: ``PYTHON_JIT=1`` turns it on.
"""

import os
from pathlib import Path

CACHE = Path(os.environ.get("JIT_UNWIND_CACHE", Path.home() / ".cache" / "jit-unwind"))

# minor version -> (directory under CACHE, has the JIT)
INTERPRETERS = {
    "3.13": ("cpython-3.13.5-jit-x86_64-linux", True),
    "3.14": ("cpython-3.14.6-jit-x86_64-linux", True),
    "3.15": ("cpython-3.15.0rc2-x86_64-linux", False),
}
JIT_MINORS = [minor for minor, (_, jit) in INTERPRETERS.items() if jit]


def fixture_python(minor: str) -> Path:
    """The interpreter of CPython ``minor`` ("3.14"); fails the test when missing."""
    directory, _jit = INTERPRETERS[minor]
    path = CACHE / directory / "bin" / f"python{minor}"
    assert path.exists(), (
        f"{path} is missing: run tests/fixtures/build_cpython.sh {minor} "
        "(make test does)")
    return path


def jit_python(minor: str = "3.13") -> Path:
    """An interpreter with the JIT built in (off unless PYTHON_JIT=1)."""
    assert INTERPRETERS[minor][1], f"CPython {minor} has no JIT build here"
    return fixture_python(minor)
