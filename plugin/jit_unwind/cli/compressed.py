"""Compressed core files, as systemd-coredump stores them (zstd by default; xz, lz4 and
gzip elsewhere): told by their magic bytes, whatever their name, and decompressed once
into a private temporary file, since GDB and LLDB read only plain cores."""

import contextlib
import os
import re
import sys
from typing import Any, Callable, ContextManager, Iterator, Optional, Tuple, Type

from .errors import CliError

# (format, magic bytes at offset 0, the Python package that reads it, where it comes from)
FORMATS: Tuple[Tuple[str, bytes, str, str], ...] = (
    ("zstd", b"\x28\xb5\x2f\xfd", "zstandard",
     "pip install zstandard, or apt-get install python3-zstandard"),
    ("xz", b"\xfd7zXZ\x00", "lzma", "a Python built with lzma"),
    ("lz4", b"\x04\x22\x4d\x18", "lz4",
     "pip install lz4 (the jit-unwind[lz4] extra), or apt-get install python3-lz4"),
    ("gzip", b"\x1f\x8b", "gzip", "a Python built with zlib"),
)
_CHUNK = 1 << 20
# Characters a debugger's file-name parsing may take as escapes or separators.
_MISREAD = re.compile(r"[\\\s'\"]")


def compression(path: str) -> Optional[str]:
    """The compression format of the file at ``path`` by its first bytes, None for a
    file that is not compressed (an ELF core starts with \\x7fELF)."""
    with open(path, "rb") as handle:
        head = handle.read(8)
    for name, magic, _module, _hint in FORMATS:
        if head.startswith(magic):
            return name
    return None


def _opener(name: str) -> Tuple[Callable[[str], ContextManager[Any]],
                                Tuple[Type[BaseException], ...]]:
    """A function opening a file of format ``name`` for reading its decompressed bytes,
    and what its library raises (besides OSError) for a stream that is corrupt or cut
    short: EOFError for each, lz4's binding a RuntimeError, gzip's a zlib.error (its
    BadGzipFile is an OSError); CliError naming the package to install when this Python
    lacks it."""
    module, hint = next((module, hint) for format_, _magic, module, hint in FORMATS
                        if format_ == name)
    try:
        if name == "zstd":
            import zstandard
            return (lambda path: _ZstdFile(path, zstandard.ZstdDecompressor()),
                    (zstandard.ZstdError, EOFError))
        if name == "xz":
            import lzma
            return lzma.open, (lzma.LZMAError, EOFError)
        if name == "lz4":
            import lz4.frame
            return lz4.frame.open, (RuntimeError, EOFError)
        import gzip
        import zlib
        return gzip.open, (zlib.error, EOFError)
    except ImportError:
        raise CliError(f"reading a {name}-compressed core needs the Python package "
                       f"{module!r} ({sys.executable} cannot import it): {hint}") from None


class _ZstdFile:
    """A .zst file's decompressed bytes, read(); EOFError when it ends inside a frame
    (zstandard's stream_reader just stops there).  systemd writes one frame, but frames
    one after another are a valid .zst too."""

    def __init__(self, path: str, decompressor):
        self._file = open(path, "rb")
        self._decompressor = decompressor
        self._frame = decompressor.decompressobj()

    def read(self, size: int = -1) -> bytes:
        while True:
            chunk = self._file.read(_CHUNK)
            if not chunk:
                if not self._frame.eof:
                    raise EOFError("the file ends inside a zstd frame: it is cut short")
                return b""
            if self._frame.eof:  # a next frame
                self._frame = self._decompressor.decompressobj()
            data = self._frame.decompress(chunk)
            while self._frame.eof and self._frame.unused_data:  # bounded by the chunk
                rest = self._frame.unused_data
                self._frame = self._decompressor.decompressobj()
                data += self._frame.decompress(rest)
            if data:
                return data

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self._file.close()


def decompress(path: str, name: str, target: str) -> None:
    """Write the decompressed bytes of ``path`` (format ``name``) to ``target``;
    CliError for a stream that is corrupt or cut short, or a disk that is full."""
    import shutil
    opener, corrupt = _opener(name)
    try:
        with opener(path) as source, open(target, "wb") as sink:
            shutil.copyfileobj(source, sink, _CHUNK)
    except OSError as error:
        if error.errno is not None:  # reading or writing a file (a full disk), not the data
            raise CliError(f"cannot decompress {path} into {target}: {error} "
                           "(TMPDIR names another directory for it)") from None
        raise CliError(f"{path} is not a complete {name} stream: {error}") from None
    except corrupt as error:
        raise CliError(f"{path} is not a complete {name} stream: {error}") from None


@contextlib.contextmanager
def plain_core(path: str) -> Iterator[str]:
    """A path the debugger reads ``path`` by, as a plain core: itself; a decompressed
    copy (stderr says so); or a symbolic link with a plain name, for a name GDB would
    misread (coredumpctl's core.python3\x2e14...: GDB 18 takes the backslashes of a
    core's name as escapes).  Either lives in a private temporary directory, removed on
    leaving."""
    name = compression(path)
    if name is None and not _MISREAD.search(path):
        yield path
        return
    import shutil  # here: a plain core, the usual case, needs neither
    import tempfile
    directory = tempfile.mkdtemp(prefix="jit-unwind-core-")  # mode 0700: the core is private
    try:
        target = os.path.join(directory, "core")
        if name is None:
            os.symlink(os.path.abspath(path), target)
        else:
            print(f"jit-unwind: {path} is {name}-compressed: reading a decompressed copy "
                  f"({target}, removed afterwards)", file=sys.stderr)
            decompress(path, name, target)
        yield target
    finally:
        shutil.rmtree(directory, ignore_errors=True)
