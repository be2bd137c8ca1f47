"""Where the CPython 3.13 JIT build lives (built by tests/fixtures/build_cpython_jit.sh)."""

import os
from pathlib import Path

CACHE = Path(os.environ.get("JIT_UNWIND_CACHE", Path.home() / ".cache" / "jit-unwind"))
JIT_PYTHON = CACHE / "cpython-3.13-jit" / "bin" / "python3.13"


def jit_python() -> Path:
    assert JIT_PYTHON.exists(), (
        f"{JIT_PYTHON} is missing: run tests/fixtures/build_cpython_jit.sh "
        "(make test does)")
    return JIT_PYTHON
