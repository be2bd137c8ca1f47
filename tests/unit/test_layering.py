"""The core never imports a debugger: only the adapters do."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "plugin" / "jit_unwind"
DEBUGGER_MODULES = {"gdb", "lldb"}
ADAPTERS = {"gdb", "lldb"}


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_only_adapters_import_debuggers():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        adapter = path.relative_to(PACKAGE).parts[0] in ADAPTERS
        if not adapter and DEBUGGER_MODULES & set(_imports(path)):
            offenders.append(str(path))
    assert not offenders
    assert any(PACKAGE.rglob("*.py"))
