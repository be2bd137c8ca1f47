"""Where the CPython test interpreters live (made by tests/fixtures/build_cpython.sh).

Each is unpacked from ``../shared/cpython`` when that archive is there, else built from
Debian's source package, into ``~/.cache/jit-unwind/<name>`` (``JIT_UNWIND_CACHE``).
The JIT builds have the JIT built but off: ``PYTHON_JIT=1`` turns it on.
"""

import os
import shutil
import subprocess
from pathlib import Path

CACHE = Path(os.environ.get("JIT_UNWIND_CACHE", Path.home() / ".cache" / "jit-unwind"))

# name -> (directory under CACHE, has the JIT). A name is the minor version ("3.14"),
# with "t" for a free-threaded build ("3.14t", binary python3.14t) or a "-variant"
# ("3.14-tailcall"); the directory names how it was built (build_cpython.sh reads them).
INTERPRETERS = {
    "3.13": ("cpython-3.13.5-jit-x86_64-linux", True),
    "3.14": ("cpython-3.14.6-jit-x86_64-linux", True),
    "3.15": ("cpython-3.15.0rc2-x86_64-linux", False),
    "3.13t": ("cpython-3.13.5t-x86_64-linux", False),
    "3.14t": ("cpython-3.14.6t-x86_64-linux", False),
    "3.15-jit": ("cpython-3.15.0rc2-jit-x86_64-linux", True),
    "3.14-tailcall": ("cpython-3.14.6-clang-tailcall-x86_64-linux", True),
}
# Cross-built for aarch64 Linux and run through qemu-user (build_cpython_aarch64.sh):
# name -> directory under CACHE; each has the JIT built in, off unless PYTHON_JIT=1.
AARCH64_INTERPRETERS = {
    "3.14": "cpython-3.14.6-jit-aarch64-linux",
}
# The sysroot qemu-aarch64 -L and gdb-multiarch's `set sysroot` take for them.
AARCH64_SYSROOT = Path("/usr/aarch64-linux-gnu")
# The JIT of 3.13 and 3.14: executors made of an entry shim and a trace of stencils.
JIT_MINORS = ["3.13", "3.14"]
# The plain builds, one per minor version (the others are variants of them).
MINORS = [name for name in INTERPRETERS if name.replace(".", "").isdigit()]
FREE_THREADED = [name for name in INTERPRETERS if name.split("-")[0].endswith("t")]


def binary_name(name: str) -> str:
    """``python3.14`` for "3.14" and "3.14-tailcall", ``python3.14t`` for "3.14t"."""
    return "python" + name.split("-")[0]


def fixture_python(name: str) -> Path:
    """The interpreter called ``name`` ("3.14", "3.14t"); fails the test when missing."""
    directory, _jit = INTERPRETERS[name]
    path = CACHE / directory / "bin" / binary_name(name)
    assert path.exists(), (
        f"{path} is missing: run tests/fixtures/build_cpython.sh {name} "
        "(make test does)")
    return path


def jit_python(minor: str = "3.13") -> Path:
    """An interpreter with the JIT built in (off unless PYTHON_JIT=1)."""
    assert INTERPRETERS[minor][1], f"CPython {minor} has no JIT build here"
    return fixture_python(minor)


def aarch64_python(name: str = "3.14") -> Path:
    """The aarch64 interpreter called ``name``, run as ``qemu-aarch64 -L
    AARCH64_SYSROOT <path>``; fails the test when missing."""
    path = CACHE / AARCH64_INTERPRETERS[name] / "bin" / binary_name(name)
    assert path.exists(), (
        f"{path} is missing: run tests/fixtures/build_cpython_aarch64.sh {name}")
    return path


def stripped_copy(name: str, directory: Path) -> Path:
    """A copy of interpreter ``name``'s whole prefix in ``directory`` whose executable
    and libpython keep their dynamic symbols only (``strip --strip-unneeded``, as a
    distribution ships them: no DWARF, no static functions' names); its binary's path.
    The copy keeps the files' names, by which the plugin knows CPython's."""
    binary = fixture_python(name)
    prefix = directory / binary.parent.parent.name
    shutil.copytree(binary.parent.parent, prefix, symlinks=True)
    libraries = [path for path in (prefix / "lib").glob("libpython*.so*")
                 if not path.is_symlink()]
    copy = prefix / "bin" / binary.name
    subprocess.run(["strip", "--strip-unneeded", str(copy), *map(str, libraries)],
                   check=True)
    return copy
