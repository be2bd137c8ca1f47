"""A short seeded fuzz run of the core over real core files (``make fuzz`` runs 10,000+
cases; docs/robustness.md).  FUZZ_SEED changes the seed; a failure names its subject,
seed and mutation and the command that reproduces it."""

import os

from tests.fuzz import harness
from tests.fuzz.cores import MAIN, OUTERMOST, RECIPES
from tests.fuzz.harness import Mutation, Subject
from tests.fuzz.mutations import mutation_for
from tests.fuzz.run import run_cases

SHORT_RUN = int(os.environ.get("FUZZ_SHORT_COUNT", 300))


def test_short_fuzz_run(fuzz_subjects):
    seed = int(os.environ.get("FUZZ_SEED", 20261123))
    figures, failures = run_cases(list(fuzz_subjects.values()), seed, SHORT_RUN)
    assert not failures, "\n".join(map(str, failures[:10])) + f"\n{figures}"
    # The mutations reach the walk: most cases change what it finds.
    assert figures["cases whose mutation changed the result"] > SHORT_RUN // 3, figures


def test_intact_walks_are_complete(fuzz_subjects):
    """The reference walks the checks rest on go through the JIT frames to the end (the
    end the recipe states: the test debugger has no GDB heuristics)."""
    for name, subject in fuzz_subjects.items():
        frames = subject.reference.frames
        kinds = [frame.kind.value for frame in frames]
        assert "jit" in kinds, (name, kinds)
        end = RECIPES[name].end
        if end in (MAIN, OUTERMOST):
            assert subject.reference.natural_end, (name, subject.reference.reason)
        else:
            assert end in subject.reference.reason, (name, subject.reference.reason)
            assert kinds[-1] == "other", (name, kinds)  # past the JIT frames
        if end == MAIN:
            assert frames[-1].name in ("main", "_start"), (name, frames[-1])
        if subject.recorded.python:
            assert subject.reference.python, name


# --- the checks themselves can fail ------------------------------------------------------

QUIET = Mutation("stack-words", "one word far above the walked stack")


def _quiet(subject: Subject) -> Mutation:
    """A mutation the walk never reads: a word near the top of the stack segment."""
    top = subject.image.stack_segment().end - 8
    return Mutation(QUIET.kind, QUIET.detail, {top: b"\x41" * 8})


def test_an_escaping_exception_is_reported(fuzz_subjects, monkeypatch):
    subject = fuzz_subjects["toy-mixed"]
    from jit_unwind.unwind import strategies

    def broken(_ctx):
        raise ValueError("injected")
    monkeypatch.setattr(strategies, "STRATEGIES", [("broken", broken)])
    failures = subject.check(1, _quiet(subject))
    assert any("exception escaped" in f.problem and "injected" in f.problem
               for f in failures), failures


def test_lost_frames_are_reported(fuzz_subjects, monkeypatch):
    """A walk that drops frames the intact core's walk found (and that no corrupted byte
    decides) is caught twice: against the intact walk and against the plain debugger."""
    subject = fuzz_subjects["toy-fp"]
    from jit_unwind.stack import frames as stack
    original = stack.describe

    def describe(frame, cache):
        if frame.level >= 3:
            raise stack.DebuggerError("injected")
        return original(frame, cache)
    monkeypatch.setattr(stack, "describe", describe)
    problems = [f.problem for f in subject.check(1, _quiet(subject))]
    assert any(p.startswith("frames lost: 3 frames") for p in problems), problems
    assert any(p.startswith("frames lost: the debugger alone") for p in problems), problems


def test_a_walk_without_a_reason_and_a_slow_case_are_reported(fuzz_subjects, monkeypatch):
    subject = fuzz_subjects["toy-frameless"]
    from jit_unwind.stack import frames as stack
    monkeypatch.setattr(stack, "MAX_FRAMES", 2)
    monkeypatch.setattr(stack, "walk", lambda thread, cache: (
        _first_two(thread, cache), ""))
    monkeypatch.setattr(harness, "walk", stack.walk)
    monkeypatch.setattr(harness, "TIME_BUDGET", 0.0)
    problems = [f.problem for f in subject.check(1, _quiet(subject))]
    assert any(p.startswith("the walk ended without a reason") for p in problems), problems
    assert any(p.startswith("slow: ") for p in problems), problems


def _first_two(thread, cache):
    from jit_unwind.stack.frames import describe
    frame = thread.newest_frame()
    return [describe(frame, cache), describe(frame.older(), cache)]


def test_mutations_are_reproducible(fuzz_subjects):
    for subject in fuzz_subjects.values():
        for seed in range(20):
            assert str(mutation_for(subject, seed)) == str(mutation_for(subject, seed))
