"""jit_unwind.cpython is debugger-independent: no gdb, no lldb, no adapters."""

import ast
from pathlib import Path

import jit_unwind.cpython

PACKAGE = Path(jit_unwind.cpython.__file__).parent


def imported_modules(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")


def test_no_debugger_imports():
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) >= 8
    for path in files:
        for module in imported_modules(path):
            root = module.lstrip(".").split(".")[0]
            assert root not in ("gdb", "lldb"), (path.name, module)
            # Inside the package, or the core's debugger interface; nothing else of ours.
            if module.startswith(".."):
                assert module in ("..target", "..model", "..records"), (path.name, module)


def test_public_names_exist():
    for name in jit_unwind.cpython.__all__:
        assert hasattr(jit_unwind.cpython, name), name
