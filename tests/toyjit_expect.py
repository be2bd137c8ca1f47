"""What a correct backtrace of the toy JIT (tests/fixtures/toyjit.c) looks like."""

import re
from typing import List, Tuple

JIT_ANON = r"\[jit 0x[0-9a-f]+\+0x[0-9a-f]+\]"
PERF_NAMES = {"fp": "toy::jit_fp", "fp-corrupt": "toy::jit_fp_corrupt",
              "frameless": "toy::jit_frameless", "trampoline": "toy::enter_trampoline"}
# How each kind of JIT frame is unwound, with and without a perf map.
METHODS = {"fp": "frame-pointer", "frameless": "entry-record", "trampoline": "prologue-search"}
# toyjit --gdb-jit registers its fp functions through GDB's JIT interface, all under one
# name (as CPython 3.15 names every executor py::jit_entry:<jit>); GDB unwinds them with
# their .eh_frame, so they carry no "[via ...]".
GDB_JIT_NAME = "toy::jit_entry:<jit>"
BY_GDB = "gdb"


def level_kind(mode: str, depth: int) -> str:
    if mode in ("fp", "frameless"):
        return mode
    return "fp" if depth % 2 == 0 else "frameless"


def jit_frames(kind: str) -> List[str]:
    return ["fp"] if kind == "fp" else ["frameless", "trampoline"]


def expected_frames(mode: str, depth: int, perf_map: bool,
                    gdb_jit: bool = False) -> List[Tuple[str, str]]:
    """(regex for the frame's name, strategy) from toy_stop outwards to main; with
    ``gdb_jit`` the fp frames are registered code, unwound by GDB (strategy BY_GDB)."""
    frames = [("toy_stop", "")]
    for level in range(depth + 1):
        frames.append(("jit_callback", ""))
        for jit in jit_frames(level_kind(mode, level)):
            if gdb_jit and jit == "fp":
                name = PERF_NAMES[jit] if perf_map else GDB_JIT_NAME
                frames.append((re.escape(name), BY_GDB))
            elif perf_map:
                frames.append((re.escape(PERF_NAMES[jit]), "prologue"))
            else:
                frames.append((JIT_ANON, METHODS[jit]))
        frames.append(("call_jit", ""))
    frames.append(("main", ""))
    return frames


def check_backtrace(frames, mode: str, depth: int, perf_map: bool,
                    show_method: bool = True, gdb_jit: bool = False) -> None:
    """Assert ``frames`` (from tests.support.parse_backtrace) are exactly the true ones."""
    names = [f.function for f in frames]
    assert "toy_stop" in names, "\n".join(f.line for f in frames)
    start = names.index("toy_stop")
    inner = frames[:start]
    assert all(not f.function.startswith("??") for f in inner), [f.line for f in inner]
    actual = frames[start:]
    expected = expected_frames(mode, depth, perf_map, gdb_jit)
    listing = "\n".join(f.line for f in frames)
    assert len(actual) == len(expected), f"expected {len(expected)} frames:\n{listing}"
    for frame, (pattern, method) in zip(actual, expected):
        assert re.match(pattern + r"(\s|$)", frame.function), f"{frame.line!r} !~ {pattern}"
        if method == BY_GDB:
            assert "[via" not in frame.function and "unwind stopped" not in frame.function, \
                frame.line
        elif method and show_method:
            assert f"[via {method}]" in frame.function, frame.line
        assert "guess" not in frame.function, frame.line
