"""The tests' clean-up of the files their processes write in /tmp (tests/support.py):
only what was written while the session ran, since a pid may be another test's by then."""

import os

from tests.support import SessionOutput, remove_process_files

FAKE_PID = 2 ** 22 + 4242  # above pid_max: no process of this machine has it


def test_only_files_written_during_the_session_are_removed():
    path = f"/tmp/perf-{FAKE_PID}.map"
    output = SessionOutput("inferior-pid 4194304\n")
    output.window = (1_000_000.0, 2_000_000.0)
    try:
        for written, removed in ((1_500_000.0, True), (999_000.0, False),
                                 (2_001_000.0, False)):
            with open(path, "w") as handle:
                handle.write("7f0000001000 10 f\n")
            os.utime(path, (written, written))
            remove_process_files([FAKE_PID], output)
            assert os.path.exists(path) != removed, written
        remove_process_files([FAKE_PID], "a session's text without its time")
        assert not os.path.exists(path)  # as before: whatever its age
    finally:
        if os.path.exists(path):
            os.unlink(path)
