"""Issue 34 (1): a registered frame provider costs LLDB 23 ~0.5 ms at every stop it
applies to, internal ones included (an ignored breakpoint hit).  The provider applies
only to a process a public stop found JIT code or Python in (registration.wanted):
LLDB makes it at none of a C program's stops, and the toy JIT's first stop still
goes through it."""

from tests.lldb_driver import LLDB_INIT, parse_lldb_backtrace, run_lldb
from tests.support import fixture_binary

# Counts the providers LLDB makes (JitFrameProvider.__init__), printed at the end.
COUNT_PROVIDERS = ("script import jit_unwind.lldb.provider as p; p.MADE = [0]; "
                   "p._init = p.JitFrameProvider.__init__; "
                   "p.JitFrameProvider.__init__ = lambda self, *a: "
                   "(p.MADE.__setitem__(0, p.MADE[0] + 1), p._init(self, *a))[1]")


def test_no_provider_made_at_the_stops_of_a_c_program():
    output = run_lldb([f"command script import {LLDB_INIT}", COUNT_PROVIDERS,
                       "breakpoint set -n work", "breakpoint modify -i 50 1",
                       "process launch", "bt",
                       "script print('providers made:', p.MADE[0])"],
                      [fixture_binary("stop_loop"), "100"], plugin=False)
    assert "providers made: 0" in output, output
    frames = parse_lldb_backtrace(output)
    assert [f.function for f in frames[:2]] == ["work", "main"], output
    assert not any("[synthetic]" in f.line for f in frames), output


def test_the_toy_jit_first_stop_goes_through_the_provider():
    output = run_lldb([f"command script import {LLDB_INIT}", COUNT_PROVIDERS,
                       "process launch", "bt",
                       "script print('providers made:', p.MADE[0])"],
                      [fixture_binary("toyjit"), "mixed", "1", "sigtrap"], plugin=False)
    frames = parse_lldb_backtrace(output)
    names = [f.function for f in frames]
    assert "main" in names, output
    assert any(name.startswith("[jit") for name in names), output
    assert "providers made: 0" not in output, output
