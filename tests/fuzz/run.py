"""The core-level fuzz run: ``python -m tests.fuzz.run --seed S --count N``.

Records the cores (``tests/fuzz/cores.py``, once per cores directory), then runs N cases
round-robin over the subjects; case n uses seed S + n.  Prints the figures
(docs/robustness.md records one run) and every failure with the command that
reproduces it; exits 1 when a case failed.
"""

import argparse
import gc
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import List, Sequence

REPO = Path(__file__).resolve().parent.parent.parent
if str(REPO / "plugin") not in sys.path:
    sys.path.insert(0, str(REPO / "plugin"))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fuzz import harness
from tests.fuzz.cores import RECIPES, record_cores
from tests.fuzz.harness import Failure, Subject
from tests.fuzz.mutations import mutation_for



def run_cases(subjects: Sequence[Subject], seed: int, count: int, progress=None):
    """Run ``count`` cases; return (figures, failures)."""
    failures: List[Failure] = []
    kinds: Counter = Counter()
    problems: Counter = Counter()
    slowest = (0.0, "")
    changed = most_reads = largest_read = 0
    started = time.perf_counter()
    for number in range(count):
        if number in (0, 4 * len(subjects)):
            # The subjects and the caches the first cases fill (symbol tables, CFI) are
            # millions of long-lived objects: a full collection over them takes a second
            # of some unlucky case's CPU time.  They stay: leave them out of collections.
            gc.collect()
            gc.freeze()
        subject = subjects[number % len(subjects)]
        case_seed = seed + number
        mutation = mutation_for(subject, case_seed)
        kinds[mutation.kind] += 1
        case_start = time.process_time()
        found = subject.check(case_seed, mutation)
        changed += bool(getattr(subject, "last_changed", False))
        reads, largest = getattr(subject, "last_reads", (0, 0))
        most_reads, largest_read = max(most_reads, reads), max(largest_read, largest)
        seconds = time.process_time() - case_start
        if seconds > slowest[0]:
            described = str(mutation)
            described = described if len(described) < 120 else described[:117] + "..."
            slowest = (seconds, f"{subject.name} seed={case_seed} [{described}]")
        for failure in found:
            problems[failure.problem.split(":")[0]] += 1
            if progress:
                progress(f"FAIL {failure}\n")
        failures.extend(found)
        if progress and (number + 1) % 500 == 0:
            progress(f"{number + 1}/{count} cases, {len(failures)} failures, "
                     f"{time.perf_counter() - started:.0f} s")
    figures = {
        "cases": count,
        "subjects": [s.name for s in subjects],
        "seed": seed,
        "mutations": dict(sorted(kinds.items())),
        "cases whose mutation changed the result": changed,
        "hangs": problems["hang"],
        "escaped exceptions": problems["exception escaped"],
        "frames lost": problems["frames lost"] + problems["Python frames lost"]
        + problems["frame changed before the first corrupted read"]
        + problems["a Python frame changed before the first corrupted read"]
        + problems["a walk that read nothing corrupted ended otherwise"]
        + problems["bt's labels changed before the first corrupted read"],
        "walks ending without a reason": problems["the walk ended without a reason"],
        "over the frame budget": problems["frame budget"],
        "over the time budget": problems["slow"],
        "over the read budget": problems["absurd read"] + problems["too many reads"],
        "invalid py-mixed-bt JSON": problems["py-mixed-bt --json is not valid"],
        "failing cases": len({(f.subject, f.seed) for f in failures}),
        "most memory reads in a case": most_reads,
        "largest memory read": largest_read,
        "seconds": round(time.perf_counter() - started, 1),
        "slowest case": f"{slowest[0]:.3f} s of CPU time with its checks ({slowest[1]})",
    }
    return figures, failures


def load(names: Sequence[str], cores: Path) -> List[Subject]:
    return [Subject(recorded) for recorded in record_cores(names, cores)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", 1)))
    parser.add_argument("--count", type=int, default=int(os.environ.get("FUZZ_COUNT", 10000)))
    parser.add_argument("--subjects", default=os.environ.get("FUZZ_SUBJECTS", ",".join(RECIPES)),
                        help="comma-separated: " + ", ".join(RECIPES))
    parser.add_argument("--cores", type=Path, default=os.environ.get("FUZZ_CORES"),
                        help="where cores are kept between runs (default: made afresh)")
    parser.add_argument("--time-budget", type=float, default=harness.TIME_BUDGET)
    options = parser.parse_args(argv)
    harness.TIME_BUDGET = options.time_budget
    names = [name for name in options.subjects.split(",") if name]
    with tempfile.TemporaryDirectory(prefix="jit-unwind-fuzz-") as scratch:
        cores = options.cores or Path(scratch)
        print(f"recording cores in {cores} ...", flush=True)
        subjects = load(names, cores)
        return _run(subjects, options)


def _run(subjects, options) -> int:
    figures, failures = run_cases(subjects, options.seed, options.count,
                                  lambda text: print(text, flush=True))
    for key, value in figures.items():
        print(f"{key}: {value}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
