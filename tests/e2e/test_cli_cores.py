"""``jit-unwind core`` on cores as systemd-coredump leaves them (compressed, under
coredumpctl's names) and its output options (--native-last, color), through GDB 13
(``gdb`` on PATH, the CLI's default) and GDB 18, on a real CPython 3.14 JIT core."""

import gzip
import json
import lzma
import os
import pty
import re
import select
import subprocess
import sys

import lz4.frame
import pytest
import zstandard

from tests.driver import MIXED_JSON, driver
from tests.e2e.test_cli import (CLI_TIMEOUT, jit_core, jit_unwind,  # noqa: F401
                                sleeping_python)
from tests.support import REPO

# /var/lib/systemd/coredump/core.COMM.UID.BOOTID.PID.USEC.zst, COMM's dots escaped.
COREDUMPCTL_NAME = ("core.python3\\x2e14.0.6b1f0c2e9d7a4c3b8e5f1a2b3c4d5e6f."
                    "{pid}.1764030000000000")


def compress(source, target, fmt):
    openers = {"zstd": lambda path: zstandard.ZstdCompressor(level=1).stream_writer(
                   open(path, "wb"), closefd=True),
               "xz": lambda path: lzma.open(path, "wb", preset=0),
               "lz4": lambda path: lz4.frame.open(path, "wb"),
               "gzip": lambda path: gzip.open(path, "wb", compresslevel=1)}
    with open(source, "rb") as plain, openers[fmt](target) as packed:
        while chunk := plain.read(1 << 20):
            packed.write(chunk)
    return target


def decompressed_copy(stderr):
    """The temporary file the CLI said it decompressed into."""
    found = re.search(r"reading a decompressed copy \((\S+), removed afterwards\)", stderr)
    assert found, stderr
    return found.group(1)


@pytest.fixture(scope="module")
def zstd_core(jit_core, tmp_path_factory):  # noqa: F811
    """The JIT core compressed with zstd under coredumpctl's name for it."""
    python, core = jit_core
    directory = tmp_path_factory.mktemp("coredump")
    return python, compress(core, directory / (COREDUMPCTL_NAME.format(pid=4242) + ".zst"),
                            "zstd")


def test_a_zstd_core_under_its_coredumpctl_name(zstd_core):
    """The name has literal backslashes; the executable is found in the compressed core;
    the decompressed copy is gone afterwards."""
    python, core = zstd_core
    assert "\\x2e" in core.name
    result = jit_unwind("core", core)
    assert result.returncode == 0, result
    assert f"{core} is zstd-compressed" in result.stderr, result.stderr
    assert f"executable {python} (named by the core)" in result.stderr
    assert not os.path.exists(decompressed_copy(result.stderr))
    text = result.stdout
    assert text.count("[jit] spin (") == 2 and "[py] threads (" in text, text
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("fmt, name", [("xz", "core.xz"), ("lz4", "core.lz4"),
                                       ("gzip", "core.gz"),
                                       # the magic bytes tell, not the name
                                       ("zstd", "core"), ("xz", "core.zst")])
def test_compressed_cores_by_their_magic(jit_core, tmp_path, fmt, name):  # noqa: F811
    python, core = jit_core
    packed = compress(core, tmp_path / name, fmt)
    result = jit_unwind("core", "--python-only", packed, python)
    assert result.returncode == 0, result
    assert f"is {fmt}-compressed" in result.stderr, result.stderr
    assert "[py] spin (" in result.stdout and "[py] <module> (" in result.stdout
    assert not os.path.exists(decompressed_copy(result.stderr))


def test_an_uncompressed_core_under_a_coredumpctl_name(jit_core, tmp_path):  # noqa: F811
    """systemd with Compress=no: no suffix, the backslashes still in the name; GDB 18."""
    _python, core = jit_core
    named = tmp_path / COREDUMPCTL_NAME.format(pid=4243)
    os.link(core, named)
    result = jit_unwind("core", "--debugger", "gdb18", named)
    assert result.returncode == 0, result
    assert "compressed" not in result.stderr
    assert result.stdout.count("[jit] spin (") == 2, result.stdout


def test_a_truncated_zstd_core_is_one_line(zstd_core, tmp_path):
    _python, core = zstd_core
    cut = tmp_path / "core.zst"
    cut.write_bytes(core.read_bytes()[:100_000])
    result = jit_unwind("core", cut)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert lines[-1].startswith(f"jit-unwind: {cut} is not a complete zstd stream"), lines
    assert not os.path.exists(decompressed_copy(result.stderr))


def test_a_missing_zstandard_names_the_package(zstd_core, tmp_path):
    """This Python without zstandard (a package that fails to import stands in for it)."""
    _python, core = zstd_core
    (tmp_path / "zstandard.py").write_text("raise ImportError('no zstandard here')\n")
    result = subprocess.run(
        [sys.executable, "-m", "jit_unwind", "core", str(core)],
        capture_output=True, text=True, timeout=CLI_TIMEOUT, stdin=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO / 'plugin'}"))
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "needs the Python package 'zstandard'" in last and "pip install zstandard" in last
    assert not os.path.exists(decompressed_copy(result.stderr))


def _innermost_python(frames):
    return next(index for index, frame in enumerate(frames) if frame["python"])


def assert_native_last(whole, document):
    """``document`` (--native-last) is ``whole`` with the native frames outer to the
    innermost one running Python left out, except those running Python."""
    assert len(document["threads"]) == len(whole["threads"]) == 3
    for full, cut in zip(whole["threads"], document["threads"]):
        # every Python frame, as without the option
        assert cut["python"] == full["python"]
        inner = _innermost_python(full["frames"])
        kept = [frame["level"] for frame in cut["frames"]]
        # the native frames inner to the innermost Python-running frame, all of them
        assert kept[:inner + 1] == list(range(inner + 1))
        # outer ones only where they run Python frames
        outer = [frame for frame in full["frames"][inner:] if frame["python"]]
        assert cut["frames"][inner:] == outer
        assert len(cut["frames"]) < len(full["frames"])


def test_native_last_keeps_the_native_frames_below_the_last_python_frame(jit_core):  # noqa: F811
    python, core = jit_core
    whole = json.loads(jit_unwind("core", "--json", core, python).stdout)
    last = jit_unwind("core", "--json", "--native-last", core, python)
    assert last.returncode == 0, last
    document = json.loads(last.stdout)
    assert_native_last(whole, document)
    spinner = document["threads"][1]["frames"]
    assert "time_sleep" in [frame["function"] for frame in spinner]
    assert "thread_run" not in [frame["function"] for frame in spinner]

    text = jit_unwind("core", "--native-last", core, python)
    assert text.returncode == 0, text
    assert "time_sleep" in text.stdout and "[py] Thread._bootstrap (" in text.stdout
    assert "thread_run" not in text.stdout and "Py_RunMain" not in text.stdout
    assert "_PyEval_EvalFrameDefault" in text.stdout  # the frames holding [py] lines


def test_native_last_in_lldb(jit_core):  # noqa: F811
    """The option is py-mixed-bt's: LLDB 23 has it too."""
    python, core = jit_core
    command = "py-mixed-bt --json --all-threads --native-last"
    transcript = driver("lldb23").open_core([python], core, [MIXED_JSON, command])
    document = transcript.document(command)
    assert_native_last(transcript.document(MIXED_JSON), document)
    spinner = [frame["function"] for frame in document["threads"][1]["frames"]]
    assert "time_sleep" in spinner and "thread_run" not in spinner, spinner


def test_attach_native_last(sleeping_python):  # noqa: F811
    result = jit_unwind("attach", "--native-last", sleeping_python.pid)
    assert result.returncode == 0, result
    assert "time_sleep" in result.stdout and "[py] <module> (<string>:5)" in result.stdout
    assert "Py_RunMain" not in result.stdout, result.stdout
    assert sleeping_python.poll() is None


def test_native_last_and_python_only_exclude_each_other(jit_core):  # noqa: F811
    _python, core = jit_core
    result = jit_unwind("core", "--native-last", "--python-only", core)
    assert result.returncode == 2 and "not allowed with argument" in result.stderr


def on_a_terminal(argv, env):
    """Run ``argv`` with its stdout (and stderr) a terminal; what it wrote, its status."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, stdout=follower, stderr=follower,
                               stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    output = b""
    while True:
        ready, _, _ = select.select([leader], [], [], CLI_TIMEOUT)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    return output.decode("utf-8", "replace"), process.wait(timeout=CLI_TIMEOUT)


@pytest.mark.parametrize("debugger", ["gdb", "gdb18"])
def test_color_only_on_a_terminal(jit_core, debugger):  # noqa: F811
    python, core = jit_core
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"), TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    argv = [sys.executable, "-m", "jit_unwind", "core", "--debugger", debugger,
            str(core), str(python)]
    colored, status = on_a_terminal(argv, env)
    assert status == 0, colored
    assert "\x1b[1mThread 1 (LWP" in colored, colored
    assert re.search(r"\x1b\[32m\[py\] spin\x1b\[0m \(", colored), colored

    for options, extra in ((["--no-color"], {}), ([], {"NO_COLOR": "1"})):
        plain, status = on_a_terminal(argv[:4] + options + argv[4:], dict(env, **extra))
        assert status == 0 and "[py] spin (" in plain, plain
        assert "\x1b" not in plain, (options, extra, plain)

    piped = jit_unwind("core", "--debugger", debugger, core, python,
                       env={"TERM": "xterm-256color"})
    assert piped.returncode == 0 and "[jit] spin (" in piped.stdout
    assert "\x1b" not in piped.stdout + piped.stderr


def test_core_help_lists_the_options_and_the_exit_statuses():
    helped = jit_unwind("core", "--help")
    assert helped.returncode == 0, helped
    # argparse wraps the help at the terminal's width, hyphens included.
    flat = re.sub(r"\s+", " ", helped.stdout).replace("- ", "-")
    for option in ("--native-last", "--no-color", "compressed as systemd-coredump"):
        assert option in flat, helped.stdout
    lines = helped.stdout.splitlines()
    for status in ("  0  success", "  1  the debugger failed", "  2  usage error"):
        assert any(line.startswith(status) for line in lines), helped.stdout
    assert any("compressed core cut short" in line for line in lines)
