"""What ``attach --debugger none`` says when the kernel refuses to let it trace a
process, for what this machine cannot reproduce (its kernel has no Yama): each
ptrace_scope, with and without CAP_SYS_PTRACE (tests/e2e/test_attach_no_debugger.py
runs the cases it can)."""

import os

import pytest

from jit_unwind.liveread import refusal


@pytest.mark.parametrize("scope, capable, words", [
    ("1", False, ["ptrace_scope is 1", "only a parent", "CAP_SYS_PTRACE",
                  "sysctl kernel.yama.ptrace_scope=0"]),
    ("2", False, ["ptrace_scope is 2", "CAP_SYS_PTRACE", "run as root"]),
    ("3", False, ["ptrace_scope is 3", "until the next reboot"]),
    ("3", True, ["ptrace_scope is 3", "until the next reboot"]),
])
def test_each_scope_says_which_and_the_fix(monkeypatch, scope, capable, words):
    monkeypatch.setattr(refusal, "ptrace_scope", lambda: scope)
    monkeypatch.setattr(refusal, "has_ptrace_capability", lambda pid="self": capable)
    said = refusal.why_refused(os.getpid())
    assert all(word in said for word in words), said


@pytest.mark.parametrize("scope", ["1", "2"])
def test_a_capable_tracer_is_not_told_about_the_scope(monkeypatch, scope):
    """Scopes 1 and 2 let a tracer with CAP_SYS_PTRACE attach: the refusal was another."""
    monkeypatch.setattr(refusal, "ptrace_scope", lambda: scope)
    monkeypatch.setattr(refusal, "has_ptrace_capability", lambda pid="self": True)
    assert "ptrace_scope" not in refusal.why_refused(os.getpid())


def test_the_scope_is_read_from_yama(tmp_path, monkeypatch):
    scope = tmp_path / "ptrace_scope"
    scope.write_text("2\n")
    monkeypatch.setattr(refusal, "PTRACE_SCOPE", str(scope))
    assert refusal.ptrace_scope() == "2"
    monkeypatch.setattr(refusal, "PTRACE_SCOPE", str(tmp_path / "absent"))
    assert refusal.ptrace_scope() == ""
