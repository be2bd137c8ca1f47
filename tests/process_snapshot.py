"""What a test needs to check a backtrace's return addresses after the debugger is gone:
run inside the debugger's own Python while the process is stopped (GDB's ``python``,
LLDB's ``script``), ``snapshot(pid, directory)`` copies /proc/PID/maps and the memory of
each anonymous executable mapping (JIT code; files are read from disk instead)."""

import os

MAX_COPY = 64 << 20  # a larger mapping is left out (its frames count as unchecked)


def snapshot(pid: int, directory: str) -> None:
    with open(f"/proc/{pid}/maps") as handle:
        maps = handle.read()
    with open(os.path.join(directory, "maps"), "w") as out:
        out.write(maps)
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        for line in maps.splitlines():
            fields = line.split()
            if len(fields) > 5 or "x" not in fields[1]:
                continue  # file-backed, or not code
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if end - start > MAX_COPY:
                continue
            try:
                memory.seek(start)
                data = memory.read(end - start)
            except OSError:
                continue
            with open(os.path.join(directory, f"{start:x}.bin"), "wb") as out:
                out.write(data)
