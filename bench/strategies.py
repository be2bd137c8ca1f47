#!/usr/bin/env python3
"""What the core's unwind strategies cost per JIT frame, without a debugger: the
frame-pointer rule and a decoded known start (a perf map's), on the recorded x86-64
stacks of tests/unit/test_strategies.py, each frame in a fresh stop (its per-pc plan
made anew, as the first frame at a pc of each stop pays).

usage: python bench/strategies.py [--frames N] [--runs N]

Prints the minimum and median µs per frame over the runs.  Run it on two checkouts to
compare a change (the numbers are the same code paths GDB's unwinder and the LLDB walk
call, less the debugger's own register reads).
"""

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "plugin"), str(REPO)]

from jit_unwind.unwind import unwind_jit_frame
from tests.unit import test_strategies as recorded


def frame_pointer_case():
    layout = recorded.Layout()
    ret = recorded.native_return_address(layout)
    pc = layout.put_jit(0x40, bytes.fromhex("554889e5") + recorded.CALL_RAX)
    rbp = recorded.SP + 0x20
    layout.word(rbp, recorded.STACK + 0x9000)
    layout.word(rbp + 8, ret)
    return lambda: layout.context(pc, recorded.SP, {"rbp": rbp, "rbx": 7})


def known_start_case():
    layout = recorded.Layout()
    ret = recorded.native_return_address(layout)
    pc = layout.put_jit(0x0, recorded.TRAMPOLINE)
    layout.symbols.append(recorded.Region(recorded.JIT, recorded.JIT + 0x40, "perf-map",
                                          "enter"))
    entry_sp = recorded.SP + 7 * 8
    for index, value in enumerate([11, 12, 13, 14, 15, 16, 17]):
        layout.word(recorded.SP + index * 8, value)
    layout.word(entry_sp, ret)
    layout.word(entry_sp - 8, recorded.STACK + 0x9000)
    return lambda: layout.context(pc, recorded.SP, {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    for name, make in (("frame pointer", frame_pointer_case),
                       ("known start", known_start_case)):
        context = make()
        times = []
        for _ in range(options.runs):
            contexts = [context() for _ in range(options.frames)]
            start = time.perf_counter()
            for ctx in contexts:
                unwind_jit_frame(ctx)
            times.append((time.perf_counter() - start) / options.frames * 1e6)
        times.sort()
        print(f"{name:14s} µs/frame: min {times[0]:.1f}, median {times[len(times) // 2]:.1f}")


if __name__ == "__main__":
    main()
