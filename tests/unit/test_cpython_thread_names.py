"""Thread names (threading.Thread.name) read from stopped pyenv interpreters' memory.

tests/fixtures/python/threads_named.py starts "sleeper", "spinner" and "waiter" (and with
--extras: a thread with a materialized __dict__, one whose attributes overflow the
class's shared keys, one renamed after start, a Dummy-N thread), prints {ident: name}
and stops itself; the names read through /proc/PID/mem must be exactly those.  The
dict, int and attribute readers are also checked against the DWARF of each build, and
against memory that fails or lies part-way.
"""

import os
import random
import time

import pytest
from elftools.elf.elffile import ELFFile

from jit_unwind.cpython import CPythonRuntime, PyVersion, dicts, find_runtime
from jit_unwind.cpython.dicts import (ObjectLayout, dict_get_str, find_module,
                                      object_layout, read_attribute, read_dict_items,
                                      read_int, read_module_dict)
from jit_unwind.cpython.layout import static_layout
from jit_unwind.cpython.objects import read_unicode
from jit_unwind.cpython.thread_names import (read_interpreter_thread_names,
                                             read_thread_names, with_thread_names)
from jit_unwind.target import BytesMemory, MemoryReadError
from tests.unit._proc import FIXTURES, ProcMemory, pyenv_python, stopped_python
from tests.unit.test_cpython_layouts import dwarf_values, layout_from_file, libpython

VERSIONS = ["3.11.7", "3.12.1", "3.13.0"]
SCRIPT = FIXTURES / "threads_named.py"


def wait_all_stopped(pid, timeout=10.0):
    """A SIGSTOP stops the thread group one thread at a time: wait for every task."""
    deadline = time.monotonic() + timeout
    while True:
        states = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/stat") as handle:
                states.append(handle.read().rsplit(")", 1)[1].split()[0])
        if all(state in "Tt" for state in states):
            return
        assert time.monotonic() < deadline, f"threads of {pid} did not stop: {states}"
        time.sleep(0.005)


def expected_names(process):
    return {int(ident): name for ident, name in process.facts["names"].items()}


def objects_of(runtime) -> ObjectLayout:
    return object_layout(runtime.memory, runtime.address, runtime.layout)


def main_interpreter(runtime):
    addresses, reason = runtime.interpreter_addresses()
    assert reason == "" and len(addresses) == 1
    return addresses[0]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("extras", [False, True], ids=["basic", "extras"])
def test_names_match_threading(version, extras):
    args = ["--extras"] if extras else []
    with stopped_python(pyenv_python(version), args, script=SCRIPT) as process:
        wait_all_stopped(process.pid)
        runtime = find_runtime(process.memory, process.lookup())
        names = read_thread_names(runtime)
        expected = expected_names(process)
        assert names == expected
        assert {"MainThread", "sleeper", "spinner", "waiter"} <= set(names.values())
        if extras:
            assert {"materialized", "wörker-ß 线程 🧵", "renamed-later"} <= set(
                names.values())
            assert any(name.startswith("Dummy-") for name in names.values())
        # Every Python thread state is a thread threading knows, by the same ident.
        threads = with_thread_names(runtime.threads(), names)
        assert sorted(t.native_thread_id for t in threads) == process.task_ids()
        assert {t.thread_id: t.name for t in threads} == expected


def test_perf_trampolines_change_nothing():
    with stopped_python(pyenv_python("3.12.1"), [], python_options=["-X", "perf"],
                        script=SCRIPT) as process:
        assert os.path.exists(f"/tmp/perf-{process.pid}.map")
        wait_all_stopped(process.pid)
        runtime = find_runtime(process.memory, process.lookup())
        assert read_thread_names(runtime) == expected_names(process)


@pytest.mark.parametrize("version", VERSIONS)
def test_all_dict_and_attribute_paths_are_used(version, monkeypatch):
    """Plain Thread instances keep their attributes as values (3.11/3.12 before the
    header, 3.13 inline after it); the materialized and the crowded thread have a dict,
    split and combined; threading._active is a general (int-keyed) table."""
    seen = []
    lookup_values, dict_table = dicts._lookup_values, dicts._dict_table

    def spy_values(memory, objects, type_address, values, name):
        seen.append(("values", name))
        return lookup_values(memory, objects, type_address, values, name)

    def spy_table(memory, objects, address):
        kind, pairs = dict_table(memory, objects, address)
        seen.append(("dict", kind))
        return kind, pairs

    monkeypatch.setattr(dicts, "_lookup_values", spy_values)
    monkeypatch.setattr(dicts, "_dict_table", spy_table)
    with stopped_python(pyenv_python(version), ["--extras"], script=SCRIPT) as process:
        wait_all_stopped(process.pid)
        runtime = find_runtime(process.memory, process.lookup())
        assert read_thread_names(runtime) == expected_names(process)
    assert ("values", "_name") in seen and ("values", "_ident") in seen
    kinds = {entry[1] for entry in seen if entry[0] == "dict"}
    assert kinds == {dicts.KEYS_GENERAL, dicts.KEYS_UNICODE, dicts.KEYS_SPLIT}


@pytest.mark.parametrize("version", VERSIONS)
def test_ints_modules_and_function_attributes(version):
    with stopped_python(pyenv_python(version), [], script=SCRIPT) as process:
        runtime = find_runtime(process.memory, process.lookup())
        memory, objects = process.memory, objects_of(runtime)
        interp = main_interpreter(runtime)
        main = find_module(memory, objects, interp, "__main__")
        assert main and find_module(memory, objects, interp, "no_such_module") is None
        globals_dict = read_module_dict(memory, objects, main)
        ints = dict_get_str(memory, objects, globals_dict, "INTS")
        values = {read_unicode(memory, runtime.layout, key):
                  read_int(memory, objects, value)
                  for key, value in read_dict_items(memory, objects, ints)}
        assert values == {key: int(text) for key, text in process.facts["ints"].items()}
        # Functions keep their __dict__ at tp_dictoffset; modules too.
        sleeper = dict_get_str(memory, objects, globals_dict, "sleeper")
        label = read_attribute(memory, objects, sleeper, "label")
        assert read_unicode(memory, runtime.layout, label) == "a function attribute"
        assert read_attribute(memory, objects, sleeper, "missing") is None
        assert read_attribute(memory, objects, main, "INTS") == ints
        with pytest.raises(dicts.ObjectError, match="not a dict"):
            read_dict_items(memory, objects, sleeper)
        with pytest.raises(dicts.ObjectError, match="not a int"):
            read_int(memory, objects, label)


@pytest.mark.parametrize("version", ["3.12.1", "3.13.0"])
def test_no_threading_module_gives_no_names(version):
    with stopped_python(pyenv_python(version), [], python_options=["-S", "-I"],
                        script=FIXTURES / "threads_none.py") as process:
        assert process.facts == {"threading": False}
        runtime = find_runtime(process.memory, process.lookup())
        assert read_thread_names(runtime) == {}
        thread, = with_thread_names(runtime.threads(), {})
        assert thread.name is None


class CountingMemory(ProcMemory):
    """Reads a live process; after ``good`` reads it fails (``mode="fail"``) or
    returns seeded random bytes (``mode="lie"``)."""

    def __init__(self, pid, good=None, mode="fail"):
        super().__init__(pid)
        self.reads = 0
        self.good = good
        self.mode = mode
        self.random = random.Random(good)

    def read(self, address, size):
        self.reads += 1
        if self.good is not None and self.reads > self.good:
            if self.mode == "fail":
                raise MemoryReadError(address, size)
            return self.random.randbytes(size)
        return super().read(address, size)


def test_failing_or_lying_memory_never_raises():
    """Memory that stops answering part-way gives a correct subset; memory that answers
    with noise gives some dict, never an exception, in bounded time."""
    with stopped_python(pyenv_python("3.13.0"), ["--extras"], script=SCRIPT) as process:
        wait_all_stopped(process.pid)
        found = find_runtime(process.memory, process.lookup())
        expected = expected_names(process)

        def names_with(memory):
            try:
                return read_thread_names(CPythonRuntime(memory, found.address,
                                                        found.layout))
            finally:
                memory.close()

        counter = CountingMemory(process.pid)
        assert names_with(counter) == expected
        total = counter.reads
        assert 20 < total < 500, total
        for good in range(total + 1):
            names = names_with(CountingMemory(process.pid, good, "fail"))
            assert names.items() <= expected.items(), good
            if good == total:
                assert names == expected
            noise = names_with(CountingMemory(process.pid, good, "lie"))
            assert all(isinstance(k, int) and isinstance(v, str)
                       for k, v in noise.items()), good


def test_unreadable_active_dict_keeps_the_main_thread():
    with stopped_python(pyenv_python("3.12.1"), [], script=SCRIPT) as process:
        wait_all_stopped(process.pid)
        runtime = find_runtime(process.memory, process.lookup())
        memory, objects = process.memory, objects_of(runtime)
        interp = main_interpreter(runtime)
        module = find_module(memory, objects, interp, "threading")
        active = dict_get_str(memory, objects, read_module_dict(memory, objects, module),
                              "_active")
        keys = memory.read_u64(active + objects.dict_keys)

        class Holey(ProcMemory):
            def read(self, address, size):
                if address < keys + 32 and keys < address + size:  # the keys header
                    raise MemoryReadError(address, size)
                return super().read(address, size)

        holey = Holey(process.pid)
        try:
            names = read_interpreter_thread_names(holey, objects, interp)
        finally:
            holey.close()
        main_ident = next(ident for ident, name in expected_names(process).items()
                          if name == "MainThread")
        assert names == {main_ident: "MainThread"}


def test_no_memory_at_all_gives_no_names():
    with stopped_python(pyenv_python("3.11.7"), [], script=SCRIPT) as process:
        found = find_runtime(process.memory, process.lookup())
        nothing = CPythonRuntime(BytesMemory({}), found.address, found.layout)
        assert read_thread_names(nothing) == {}


# -- layouts against DWARF ------------------------------------------------------------

def dwarf_expressions(minor):
    def offset(type_name, member):
        return f"(long)&(({type_name} *)0)->{member}"

    keys = "struct _dictkeysobject"
    exprs = {
        "interp_modules": offset("struct _is",
                                 "modules" if minor == 11 else "imports.modules"),
        "dict_keys": offset("PyDictObject", "ma_keys"),
        "dict_values": offset("PyDictObject", "ma_values"),
        "keys_log2_size": offset(keys, "dk_log2_size"),
        "keys_log2_index_bytes": offset(keys, "dk_log2_index_bytes"),
        "keys_kind": offset(keys, "dk_kind"),
        "keys_nentries": offset(keys, "dk_nentries"),
        "keys_indices": offset(keys, "dk_indices"),
        "values_items": offset("struct _dictvalues", "values"),
        "module_dict": offset("PyModuleObject", "md_dict"),
        "tp_basicsize": offset("PyTypeObject", "tp_basicsize"),
        "tp_flags": offset("PyTypeObject", "tp_flags"),
        "tp_dictoffset": offset("PyTypeObject", "tp_dictoffset"),
        "ht_cached_keys": offset("PyHeapTypeObject", "ht_cached_keys"),
        "general_entry_size": "(long)sizeof(PyDictKeyEntry)",
        "unicode_entry_size": "(long)sizeof(PyDictUnicodeEntry)",
        "digit_size": "(long)sizeof(digit)",
    }
    if minor == 11:
        exprs["long_size"] = offset("PyLongObject", "ob_base.ob_size")
        exprs["long_digits"] = offset("PyLongObject", "ob_digit")
    else:
        exprs["long_size"] = offset("PyLongObject", "long_value.lv_tag")
        exprs["long_digits"] = offset("PyLongObject", "long_value.ob_digit")
    if minor >= 13:
        exprs["values_capacity"] = offset("struct _dictvalues", "capacity")
        exprs["values_valid"] = offset("struct _dictvalues", "valid")
    return exprs


FIXED = {"general_entry_size": 24, "unicode_entry_size": 16, "digit_size": 4}


@pytest.mark.parametrize("version", VERSIONS)
def test_object_layout_matches_dwarf(version):
    """3.11/3.12: the built-in table; 3.13: what _Py_DebugOffsets (read from libpython's
    .PyRuntime section) gives, completed by the table."""
    minor = int(version.split(".")[1])
    library = libpython(version)
    if minor <= 12:
        objects = object_layout(BytesMemory({}), 0, static_layout(PyVersion(3, minor)))
    else:
        with open(library, "rb") as handle:
            section = ELFFile(handle).get_section_by_name(".PyRuntime")
            memory = BytesMemory({section["sh_addr"]: section.data()})
        objects = object_layout(memory, section["sh_addr"], layout_from_file(library))
        assert objects.base.source.startswith("_Py_DebugOffsets")
    exprs = dwarf_expressions(minor)
    dwarf = dwarf_values(library, exprs)
    assert sorted(dwarf) == sorted(exprs), "GDB could not evaluate some expressions"
    mine = {name: FIXED.get(name, getattr(objects, name, None)) for name in exprs}
    assert mine == dwarf
