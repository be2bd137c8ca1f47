"""regions/process_root.py: where a process's own files are read from here and which pid
it knows itself by, on real processes: this one (the same root), a child in its own
mount and pid namespaces (unshare), a core's sysroot that is a whole root or only
libraries."""

import os
import subprocess
import time

from jit_unwind.regions import process_root
from jit_unwind.regions.process_root import host_path, other_root, pid_inside


def test_host_path_puts_files_under_the_root_and_leaves_memory_alone():
    root = "/proc/7/root"
    assert host_path(root, "/usr/lib/libc.so.6") == "/proc/7/root/usr/lib/libc.so.6"
    assert host_path("/srv/root/", "/tmp/perf-2.map") == "/srv/root/tmp/perf-2.map"
    assert host_path(root, "/proc/7/root/usr/bin/python3") == "/proc/7/root/usr/bin/python3"
    for name in ("/memfd:jit (deleted)", "/dev/zero (deleted)", "/SYSV00000000 (deleted)",
                 "[heap]", "[vdso]", ""):
        assert host_path(root, name) == name
    assert host_path("", "/usr/lib/libc.so.6") == "/usr/lib/libc.so.6"


def test_this_process_sees_the_same_root_and_pid():
    assert other_root(os.getpid()) == ""
    assert pid_inside(os.getpid()) == os.getpid()
    assert pid_inside(2 ** 22 + 12345) == 2 ** 22 + 12345  # no such process: as it is


def test_a_process_in_its_own_namespaces():
    child = subprocess.Popen(["unshare", "--mount", "--pid", "--fork", "--mount-proc",
                              "--kill-child", "sh", "-c", "sleep 60; true"],
                             stdin=subprocess.DEVNULL)
    sleeper = None
    try:
        deadline = time.monotonic() + 30
        while sleeper is None and time.monotonic() < deadline:
            for pid in os.listdir("/proc"):
                if pid.isdigit():
                    try:
                        with open(f"/proc/{pid}/cmdline", "rb") as handle:
                            if handle.read() == b"sleep\x0060\x00" and int(pid) != child.pid:
                                sleeper = int(pid)
                    except OSError:
                        pass
            time.sleep(0.05)
        assert sleeper is not None
        assert other_root(sleeper) == f"/proc/{sleeper}/root"
        assert pid_inside(sleeper) == 2  # the shell is 1
    finally:
        if sleeper is not None:
            os.kill(sleeper, 9)
        child.kill()
        child.wait()


class _Core:
    def __init__(self, sysroot):
        self._sysroot = sysroot

    def pid(self):
        return 2

    def sysroot(self):
        return self._sysroot


def test_a_cores_sysroot_holds_its_tmp_only_when_it_is_a_whole_root(tmp_path):
    assert process_root.process_root(_Core(str(tmp_path)), "core") == ("", 2)
    (tmp_path / "tmp").mkdir()
    assert process_root.process_root(_Core(str(tmp_path)), "core") == (str(tmp_path), 2)
    assert process_root.process_root(_Core(""), "core") == ("", 2)
