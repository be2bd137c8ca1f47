"""The core never imports a debugger: only the adapters do."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "plugin" / "jit_unwind"
DEBUGGER_MODULES = {"gdb", "lldb"}
ADAPTERS = {"gdb", "lldb"}
# The files a debugger loads to start the plugin: they import an adapter, nothing else does.
LOADERS = {"loaders"}


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


def _package_imports(path):
    """Modules of this package that ``path`` imports, as dotted paths from its root."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
            names = [node.module] if node.module else [a.name for a in node.names]
            for name in names:
                yield ".".join(base + name.split("."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("jit_unwind."):
                    yield alias.name[len("jit_unwind."):]


def test_the_core_does_not_import_an_adapter():
    """Adapters depend on the core, never the other way round."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] in ADAPTERS | LOADERS:
            continue
        offenders += [f"{path}: {name}" for name in _package_imports(path)
                      if name.split(".")[0] in ADAPTERS]
    assert not offenders


def test_the_adapter_keeps_no_core_logic():
    """What an LLDB adapter would need too lives in the core: the GDB adapter has none
    of the modules that used to hold it (symbol lookup, discovery, merge driving,
    py-mixed-bt)."""
    gdb_modules = {path.stem for path in (PACKAGE / "gdb").glob("*.py")}
    assert not gdb_modules & {"discovery", "python_runtime", "mixed_bt"}


# Decisions the LLDB adapter leaves to the core: how Python frames interleave with
# native ones (mixed, merge), which frames a walk's steps become and how they are named
# and marked (walk_frames), what lldb-19's formats become (format_strings).
LLDB_LEFT_TO_CORE = {"mixed", "merge", "stack.classify", "frame_label.bt_label",
                     "frame_label.walk_stopped"}


def _imported_names(path):
    """``module`` and ``module.name`` for each ``from ..module import name``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            if node.module is None:
                yield from (alias.name for alias in node.names)
            else:
                yield node.module
                yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_the_lldb_adapter_builds_frames_from_core_records():
    """lldb/ makes LLDB's objects from walk_frames' records: it neither interleaves
    Python frames nor labels or classifies frames itself."""
    offenders = [f"{path}: {name}" for path in (PACKAGE / "lldb").glob("*.py")
                 for name in _imported_names(path) if name in LLDB_LEFT_TO_CORE]
    assert not offenders


# What a walk decides, which the core owns: its frame limit, which registers a callee
# keeps, whether an address follows a call.
CORE_POLICY_NAMES = {"MAX_FRAMES", "MAX_INPUT_FRAMES", "CALLEE_SAVED"}
CORE_POLICY_IMPORTS = {"call_length_before"}


def test_adapters_keep_no_walk_policy():
    """gdb/ and lldb/ take the frame limit, the callee-saved registers and the
    return-address test from the core rather than defining their own."""
    offenders = []
    for adapter in ADAPTERS:
        for path in (PACKAGE / adapter).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Assign):
                    offenders += [f"{path}: defines {target.id}" for target in node.targets
                                  if isinstance(target, ast.Name)
                                  and target.id in CORE_POLICY_NAMES]
                elif isinstance(node, ast.ImportFrom):
                    offenders += [f"{path}: imports {alias.name}" for alias in node.names
                                  if alias.name in CORE_POLICY_IMPORTS]
    assert not offenders
    assert list((PACKAGE / "lldb").glob("*.py"))


def test_adapters_import_nothing_from_unwind():
    """Unwinding policy (which strategy, .eh_frame, x86-64 decoding, what follows a
    call, the caller's registers) is the core's: the adapters call the core's walk
    (``thread_walk``) and the core's answer for one frame (``frame_unwind``), never the
    ``unwind`` package itself."""
    offenders = []
    for adapter in ADAPTERS:
        for path in (PACKAGE / adapter).rglob("*.py"):
            offenders += [f"{path}: {name}" for name in _package_imports(path)
                          if name.split(".")[0] == "unwind"]
    assert not offenders
    assert list((PACKAGE / "gdb").glob("unwinder.py"))


# The rules GDB's bt and symbol file follow, which the core owns: where a walk ends and
# what its last frame says (bt_walk), which frames get a label (frame_label), which
# unwind a frame gets (frame_unwind), when a stop plans a symbol file (SymbolFiles).
GDB_CORE_RULES = {"walk_stopped", "remember_stop", "ended_by_unwinder", "may_have_label",
                  "bt_label", "function_at", "unwind_jit_code", "unwind_nocfi_code",
                  "needs_decorating", "stack_runs_jit_code"}
GDB_CORE_DECISIONS = {"plan", "nothing_to_name", "may_name_jit_code", "is_registered",
                      "is_trace"}


def test_gdb_adapter_calls_the_cores_rules_rather_than_applying_them():
    """gdb/ imports none of the rules' parts and asks none of the questions they
    combine: it calls filtered_walk, bt_decoration, thread_needs_decorating,
    leaves_to_debugger/unwind_code and plan_for_stop."""
    offenders = []
    for path in (PACKAGE / "gdb").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                offenders += [f"{path}: imports {alias.name}" for alias in node.names
                              if alias.name in GDB_CORE_RULES]
            elif isinstance(node, ast.Attribute) and node.attr in GDB_CORE_DECISIONS:
                offenders.append(f"{path}: asks {node.attr}")
    assert not offenders
    assert list((PACKAGE / "gdb").glob("frame_filter.py"))
