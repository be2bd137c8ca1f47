"""`info jit-regions`, the settings and their help, as a GDB user meets them."""

import re

import pytest

from tests.support import PRINT_PID, fixture_binary, remove_perf_map, run_gdb

ROW = re.compile(r"^(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\S+)\s*(.*)$")


def _rows(output):
    return [m.groups() for m in map(ROW.match, output.splitlines()) if m]


def test_info_jit_regions_lists_mappings_and_perf_map_entries(gdb, tmp_path):
    core = tmp_path / "toyjit.core"
    toyjit = fixture_binary("toyjit")
    live = run_gdb(gdb, ["run", PRINT_PID, "info jit-regions", f"gcore {core}"],
                   [toyjit, "mixed", "1", "sigtrap", "--perf-map"])
    try:
        from_core = run_gdb(gdb, ["info jit-regions"], [toyjit], core=core)
    finally:
        remove_perf_map(live)
    assert re.search(r"^start\s+end\s+size\s+source\s+name$", live, re.M), live
    for output, mapping_source in ((live, "maps"), (from_core, "core")):
        rows = _rows(output)
        named = {row[4]: row for row in rows if row[3] == "perf-map"}
        assert set(named) == {"toy::jit_fp", "toy::jit_fp_corrupt", "toy::jit_frameless",
                              "toy::enter_trampoline"}, output
        mappings = [row for row in rows if row[3] == mapping_source]
        assert mappings, output
        for start, end, size, _source, _name in rows:
            assert int(end, 16) - int(start, 16) == int(size, 16)
        # Every perf-map entry lies inside an anonymous executable mapping.
        for start, end, *_ in named.values():
            assert any(int(m[0], 16) <= int(start, 16) and int(end, 16) <= int(m[1], 16)
                       for m in mappings), output


def test_info_jit_regions_without_jit_code(gdb):
    output = run_gdb(gdb, ["break main", "run", "info jit-regions"],
                     [fixture_binary("toyjit"), "fp", "0", "breakpoint"])
    assert "No JIT regions" in output


def test_info_jit_regions_without_a_process(gdb):
    output = run_gdb(gdb, ["info jit-regions"])
    assert "No process: run a program or load a core file first." in output


def test_info_jit_regions_rejects_what_is_no_address(gdb):
    output = run_gdb(gdb, ["break main", "run", "info jit-regions nosuchsymbol",
                           "info jit-regions --nosuch"],
                     [fixture_binary("toyjit"), "fp", "0", "breakpoint"])
    assert 'nosuchsymbol: No symbol "nosuchsymbol" in current context.' in output, output
    assert "info jit-regions: no option --nosuch. Usage: info jit-regions [ADDRESS] " \
           "[--source SOURCE] [--all]" in output, output


@pytest.mark.parametrize("command, expected", [
    ("help info jit-regions", "List the JIT code regions of the current process."),
    ("help set jit-unwind", "Settings of jit-unwind"),
    ("help show jit-unwind", "Show settings of jit-unwind"),
    ("help set jit-unwind show-method", "Set whether backtraces show how jit-unwind unwound "
                                       "each JIT frame."),
    ("help set jit-unwind debug", "Set whether jit-unwind prints debugging messages."),
    ("show jit-unwind show-method", "Showing how JIT frames were unwound is off."),
])
def test_help_and_settings(gdb, command, expected):
    assert expected in run_gdb(gdb, [command])


def test_show_method_setting_round_trips(gdb):
    output = run_gdb(gdb, ["set jit-unwind show-method on", "show jit-unwind show-method"])
    assert "Showing how JIT frames were unwound is on." in output


def test_disable_frame_filter_turns_naming_off(gdb):
    output = run_gdb(gdb, ["run", "disable frame-filter global jit-unwind", "bt"],
                     [fixture_binary("toyjit"), "fp", "0", "sigtrap"])
    assert "[jit 0x" not in output
    # The unwinder still works: the walk reaches main.
    assert re.search(r"in main \(", output), output
