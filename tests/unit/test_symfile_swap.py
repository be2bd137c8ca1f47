"""What SymbolFiles decides around the debugger's loading of a file (plan_stop, swap,
is_ours): the adapters only add and remove modules."""

import os

from jit_unwind.symfile import SymbolFiles

from .test_symfile import CPYTHON_312_TRAMPOLINE, JIT, _Cache, _code, _map, _Process
from jit_unwind.target import BytesMemory


class _StopCache(_Cache):
    def __init__(self, regions, process, may_name=True):
        super().__init__(regions)
        self.process = process
        self.may_name = may_name

    def may_name_jit_code(self):
        return self.may_name


def test_plan_stop_skips_runtime_lookups_until_a_file_is_loaded():
    data, symbols = _code(("a", CPYTHON_312_TRAMPOLINE))
    process = _Process(BytesMemory({JIT: data}))
    files = SymbolFiles()
    try:
        assert files.plan_stop(_StopCache(_map(symbols), process, may_name=False)) == (
            None, None)
        assert files.loaded is None
        old, new = files.plan_stop(_StopCache(_map(symbols), process))
        assert old is None and new == files.loaded and os.path.exists(new)
        # Loaded: a stop where nothing may name JIT code still unloads it.
        assert files.plan_stop(_StopCache(_map([]), process, may_name=False)) == (new, None)
    finally:
        files.cleanup()


def test_swap_unloads_then_loads_and_drops_what_the_debugger_read(tmp_path):
    files = SymbolFiles()
    directory = tmp_path / "jit-unwind-abc"
    directory.mkdir()
    old, new = directory / "jit-1-1.elf", directory / "jit-1-2.elf"
    old.write_bytes(b"old")
    new.write_bytes(b"new")
    calls = []
    files.swap(str(old), str(new), lambda path: calls.append(("unload", path)),
               lambda path: calls.append(("load", path)) or True, keep_loaded_file=False)
    assert calls == [("unload", str(old)), ("load", str(new))]
    assert not directory.exists()  # both files gone, then the empty directory


def test_swap_drops_the_directory_after_a_failed_load_when_no_file_is_kept(tmp_path):
    # LLDB exits without running atexit handlers: a file it would not load (an aarch64
    # core's, say) must not leave its private directory behind in /tmp.
    files = SymbolFiles()
    directory = tmp_path / "jit-unwind-abc"
    directory.mkdir()
    new = directory / "jit-1-1.elf"
    new.write_bytes(b"new")
    files.swap(None, str(new), lambda path: None, lambda path: False,
               keep_loaded_file=False)
    assert not directory.exists()
    # A directory holding another file stays, and so does a kept file's.
    directory.mkdir()
    other, new = directory / "other", directory / "jit-1-2.elf"
    other.write_bytes(b"")
    new.write_bytes(b"new")
    files.swap(None, str(new), lambda path: None, lambda path: False,
               keep_loaded_file=False)
    assert directory.exists() and not new.exists()
    new.write_bytes(b"new")
    files.swap(None, str(new), lambda path: None, lambda path: False)
    assert directory.exists() and not new.exists()


def test_swap_keeps_the_loaded_file_and_forgets_a_failed_one(tmp_path):
    files = SymbolFiles()
    kept, failed = tmp_path / "jit-1-1.elf", tmp_path / "jit-1-2.elf"
    kept.write_bytes(b"kept")
    failed.write_bytes(b"failed")
    files.swap(None, str(kept), lambda path: None, lambda path: True)
    assert kept.exists()
    files.loaded = str(failed)
    files.swap(None, str(failed), lambda path: None, lambda path: False)
    assert not failed.exists() and files.loaded is None
    files.swap(None, None, lambda path: None, lambda path: 1 / 0)  # nothing to do


def test_is_ours():
    files = SymbolFiles()
    assert files.is_ours("/tmp/jit-unwind-1f2e/jit-4242-3.elf")
    assert not files.is_ours("/tmp/jit-unwind-/jit-4242-3.elf")
    assert not files.is_ours("/tmp/other/jit-4242-3.elf")
    assert not files.is_ours("/tmp/jit-unwind-1f2e/jit-4242-3.elf.bak")
    assert not files.is_ours("/usr/lib/libpython3.13.so")
    assert not files.is_ours("")
