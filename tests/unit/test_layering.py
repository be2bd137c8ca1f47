"""The package's layers: the core never imports a debugger (only the adapters do), each
layer imports only from the layers below it, no module imports itself back through
others, and the package root holds only the entry points and what every layer uses."""

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
LLDB_LEFT_TO_CORE = {"stack.mixed", "stack.merge", "stack.frames.classify",
                     "stack.frame_label.bt_label", "stack.frame_label.walk_stopped"}


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
    (``thread_walk``) and the core's answer for one frame (``native_step``), never the
    ``unwind`` package's strategies themselves."""
    offenders = []
    for adapter in ADAPTERS:
        for path in (PACKAGE / adapter).rglob("*.py"):
            offenders += [f"{path}: {name}" for name in _package_imports(path)
                          if name.split(".")[0] == "unwind"
                          and name not in ("unwind.native_step", "unwind")]
    assert not offenders
    assert list((PACKAGE / "gdb").glob("unwinder.py"))


# The rules GDB's bt and symbol file follow, which the core owns: where a walk ends and
# what its last frame says (bt_walk), which frames get a label (frame_label), which
# unwind a frame gets (native_step), when a stop plans a symbol file (SymbolFiles).
GDB_CORE_RULES = {"walk_stopped", "remember_stop", "ended_by_unwinder", "may_have_label",
                  "bt_label", "function_at", "function_in", "unwind_jit_code", "unwind_nocfi_code",
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


# The layers, bottom first: a module imports from its own folder or from a layer below,
# never from one above or beside it (docs/design.md draws them).
LAYERS = [
    # the root: records, the memory and debugger interfaces, the data model, per-file caches
    {"records", "target", "file_cache", "dependencies", "wrapper_env", "__init__"},
    {"arch", "model"},
    {"debugger"},
    {"elf"},        # ELF files: headers, notes, symbols, .eh_frame_hdr, debug files
    {"cpython"},    # the CPython runtime model
    {"regions"},    # where code is: mappings, JIT regions, perf maps, jitdumps
    {"stop"},       # the per-stop cache
    {"unwind"},     # the strategies and the one native step
    {"stack"},      # the walk, labels, the native+Python merge
    {"symfile"},    # the JIT symbol file
    {"commands"},   # the commands' logic and text
    {"gdb", "lldb", "coreread"},  # the readers
    {"liveread", "minidump"},  # no debugger: coreread's walk over ptrace, over a minidump
    {"loaders"},
    {"cli"},
    {"__main__"},
]
MAX_ROOT_MODULES = 10


def _layer_of(name):
    top = name.split(".")[0]
    for rank, layer in enumerate(LAYERS):
        if top in layer:
            return rank
    raise AssertionError(f"{name}: in no layer of LAYERS")


def _module_name(path):
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def _graph():
    """module -> the modules of this package it imports (at its top or in a function)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = set()
        for target in _package_imports(path):
            # ``from .x import name``: module x.name if it is one, else module x
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def test_every_top_level_name_is_in_a_layer():
    for path in PACKAGE.iterdir():
        if path.suffix == ".py" or (path / "__init__.py").exists():
            _layer_of(path.stem)


def test_no_import_climbs_up_or_across_the_layers():
    offenders = [f"{module} -> {target}" for module, targets in _graph().items()
                 for target in targets
                 if module.split(".")[0] != target.split(".")[0]
                 and _layer_of(target) >= _layer_of(module)]
    assert not offenders


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan's)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    """Not even one closed by an import inside a function."""
    assert _cycles(_graph()) == []
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_the_root_holds_few_modules():
    root = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_every_reader_takes_the_one_native_step():
    """One walk: the reader without a debugger and LLDB's walk take a frame's caller
    from unwind/native_step (native_caller), GDB's unwinder its first part; the
    files' CFI is read nowhere else outside unwind/."""
    graph = _graph()
    assert "unwind.native_step" in graph["coreread.frames"]
    assert "unwind.native_step" in graph["stack.thread_walk"]
    unwinder = (PACKAGE / "gdb" / "unwinder.py").read_text()
    assert "from ..unwind import native_step" in unwinder
    readers = [module for module, targets in graph.items()
               if not module.startswith("unwind.") and "unwind.cfi" in targets]
    assert readers == []
    for module in ("coreread.frames", "stack.thread_walk"):
        path = PACKAGE.joinpath(*module.split(".")).with_suffix(".py")
        text = path.read_text()
        assert "native_caller(" in text
        assert "unwind_with_cfi" not in text and "unwind_jit_frame" not in text
