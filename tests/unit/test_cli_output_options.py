"""The pieces of jit-unwind's output options on made-up data (tests/e2e/test_cli_cores.py
runs them on a real core): --native-last's filter, the colors, compressed files."""

import gzip
import io
import lzma

import pytest
import zstandard

from jit_unwind.cli import color
from jit_unwind.cli.compressed import compression, decompress, plain_core
from jit_unwind.cli.errors import CliError
from jit_unwind.stack.mixed import native_last
from jit_unwind.model import EVAL, JIT, OTHER, MixedFrame, NativeFrame, PyFrame


def py(name):
    return PyFrame(0x100, name, "app.py", 1, False, "thread", 0, 0)


def frame(level, kind=OTHER, *python):
    return MixedFrame(NativeFrame(level, kind, name=f"f{level}"), [py(n) for n in python])


def levels(frames):
    return [f.native.level for f in frames]


def test_native_last_keeps_the_inner_native_frames_and_the_python_holders():
    frames = [frame(0), frame(1), frame(2, JIT, "leaf"), frame(3), frame(4, EVAL, "mid"),
              frame(5), frame(6, EVAL, "<module>"), frame(7)]
    assert levels(native_last(frames)) == [0, 1, 2, 4, 6]


def test_native_last_when_the_innermost_frame_runs_python():
    frames = [frame(0, JIT, "hot"), frame(1), frame(2, EVAL, "top")]
    assert levels(native_last(frames)) == [0, 2]


def test_native_last_without_python_keeps_every_frame():
    frames = [frame(0), frame(1)]
    assert levels(native_last(frames)) == [0, 1]
    assert native_last([]) == []


TEXT = """Thread 1 (LWP 7) "MainThread" [holds the GIL]:
#0   time_sleep at Modules/timemodule.c:408
#12  [jit] spin (app.py:72) trace 0x7f00
     [py] spin (app.py:74)
(backtrace stopped: the outermost frame)"""


def test_colorize_marks_headings_functions_and_tags():
    lines = color.colorize(TEXT).split("\n")
    assert lines[0] == f'{color.BOLD}Thread 1 (LWP 7) "MainThread" [holds the GIL]:{color.RESET}'
    assert lines[1] == f"#0   {color.YELLOW}time_sleep{color.RESET} at Modules/timemodule.c:408"
    assert lines[2] == (f"#12  {color.MAGENTA}[jit]{color.RESET} {color.YELLOW}spin{color.RESET}"
                        " (app.py:72) trace 0x7f00")
    assert lines[3] == f"     {color.GREEN}[py] spin{color.RESET} (app.py:74)"
    assert lines[4] == "(backtrace stopped: the outermost frame)"


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("no_color, environment, stream, expected", [
    (False, {}, Terminal(), True),
    (True, {}, Terminal(), False),
    (False, {"NO_COLOR": "1"}, Terminal(), False),
    (False, {"NO_COLOR": ""}, Terminal(), True),  # no-color.org: set and not empty
    (False, {}, io.StringIO(), False),  # a pipe or a file
])
def test_color_is_wanted_only_on_a_terminal(monkeypatch, no_color, environment, stream,
                                            expected):
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert color.wanted(no_color, stream) is expected


PLAIN = b"\x7fELF" + bytes(range(256)) * 64


@pytest.mark.parametrize("fmt, pack", [
    ("zstd", lambda data: zstandard.ZstdCompressor().compress(data)),
    ("xz", lzma.compress),
    ("gzip", gzip.compress),
])
def test_compressed_files_by_magic_decompress_to_the_plain_bytes(tmp_path, fmt, pack):
    packed = tmp_path / "core.bin"
    packed.write_bytes(pack(PLAIN))
    assert compression(str(packed)) == fmt
    decompress(str(packed), fmt, str(tmp_path / "out"))
    assert (tmp_path / "out").read_bytes() == PLAIN


def test_zstd_frames_one_after_another(tmp_path):
    compressor = zstandard.ZstdCompressor()
    packed = tmp_path / "core.zst"
    packed.write_bytes(compressor.compress(PLAIN[:1000]) + compressor.compress(PLAIN[1000:]))
    decompress(str(packed), "zstd", str(tmp_path / "out"))
    assert (tmp_path / "out").read_bytes() == PLAIN


@pytest.mark.parametrize("fmt, pack", [
    ("zstd", lambda data: zstandard.ZstdCompressor().compress(data)),
    ("xz", lzma.compress),
])
def test_a_stream_cut_short_is_an_error(tmp_path, fmt, pack):
    packed = tmp_path / "core"
    packed.write_bytes(pack(PLAIN)[:-8])
    with pytest.raises(CliError, match=f"not a complete {fmt} stream"):
        decompress(str(packed), fmt, str(tmp_path / "out"))


def test_a_plain_core_is_read_where_it_is(tmp_path):
    core = tmp_path / "core.1234"
    core.write_bytes(PLAIN)
    with plain_core(str(core)) as path:
        assert path == str(core)
    assert compression(str(core)) is None


def test_a_name_gdb_would_misread_becomes_a_plain_link(tmp_path):
    core = tmp_path / "core.python3\\x2e14.0.abc.42.1764030000000000"
    core.write_bytes(PLAIN)
    with plain_core(str(core)) as path:
        assert "\\" not in path and open(path, "rb").read() == PLAIN
    assert not (tmp_path / path).exists()


def test_a_target_that_cannot_be_written_names_tmpdir(tmp_path):
    packed = tmp_path / "core.xz"
    packed.write_bytes(lzma.compress(PLAIN))
    with pytest.raises(CliError, match="cannot decompress .* No such file.*TMPDIR"):
        decompress(str(packed), "xz", str(tmp_path / "gone" / "core"))
