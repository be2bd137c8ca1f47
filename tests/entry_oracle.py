"""Run inside GDB's Python (``python from tests.entry_oracle import ...``): what the native
caller of a runtime's entry code really has in its callee-saved registers.

``find_caller(pattern)`` prints the registers GDB shows in the first frame (above frame
0) whose file and function match ``pattern`` (the entry code's native caller);
``arm()`` then sets a breakpoint where that frame resumes, at its pc with its sp, and
after ``continue`` (the JIT code returns through the entry code, which restores them)
``at_return()`` prints the registers it really has there.
"""

import re

import gdb

REGISTERS = ("rbx", "r12", "r13", "r14", "r15", "rbp")
MAX_FRAMES = 200
_found = {}


def _line(tag: str, frame, level: int) -> str:
    values = " ".join(f"{name}={int(frame.read_register(name)) & (2**64 - 1):#x}"
                      for name in ("pc", "sp", *REGISTERS))
    return f"{tag} level={level} {values}"


def find_caller(pattern: str) -> None:
    frame, level = gdb.newest_frame().older(), 1
    while frame is not None and level < MAX_FRAMES:
        pc = frame.pc()
        label = f"{gdb.solib_name(pc) or gdb.current_progspace().filename} {frame.name()}"
        if re.search(pattern, label):
            _found.update(pc=pc, sp=int(frame.read_register("sp")) & (2**64 - 1))
            print(_line("entry-caller", frame, level))
            return
        frame, level = frame.older(), level + 1
    print("entry-caller none")


def arm() -> None:
    gdb.execute("delete")
    gdb.execute(f"tbreak *{_found['pc']:#x} if $sp == {_found['sp']:#x}")


def at_return() -> None:
    print(_line("at-return", gdb.newest_frame(), 0))
