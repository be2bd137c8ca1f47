"""Errors where they belong (issue 33): the package catches everything only where a debugger
or the user calls in (an unwinder's ``__call__``, a frame filter or decorator, the LLDB frame
provider, a command's entry, a stop-hook or event handler, a listener thread, the CLI's
``main``), and each of those handlers says why on its own line. Inside the core, a handler
names the errors the code expects (unreadable memory, a corrupted file), so that a bug shows
up as one instead of as a silently wrong backtrace."""

import ast
import io
import struct
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "plugin" / "jit_unwind"
BROAD_NAMES = {"Exception", "BaseException"}
MAX_BROAD_HANDLERS = 25


def _names(node):
    if node is None:
        return set()
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(element) for element in node.elts))
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):  # builtins.Exception
        return {node.attr}
    return set()


def _is_broad(handler):
    return handler.type is None or bool(_names(handler.type) & BROAD_NAMES)


def _broad_handlers():
    """(path relative to the package, line, source line) of each broad handler."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source, filename=str(path))):
            if isinstance(node, ast.ExceptHandler) and _is_broad(node):
                found.append((str(path.relative_to(PACKAGE)), node.lineno,
                              lines[node.lineno - 1].strip()))
    return sorted(found)


def _has_comment(line):
    """Whether the line holds a ``#`` comment (a ``#`` outside a string literal).  The
    line alone is no whole statement: its tokens are read as far as they go."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if token.type == tokenize.COMMENT:
                return True
    except (tokenize.TokenError, SyntaxError):
        pass
    return False


def _listing(handlers):
    return "\n".join(f"  {path}:{line}: {text}" for path, line, text in handlers)


def test_few_broad_handlers():
    handlers = _broad_handlers()
    assert handlers, "the walk over the package found no broad handler at all"
    assert len(handlers) <= MAX_BROAD_HANDLERS, (
        f"{len(handlers)} broad handlers (except Exception / BaseException / bare except), "
        f"at most {MAX_BROAD_HANDLERS}: keep them where a debugger or the user calls in, "
        f"catch the expected errors elsewhere\n{_listing(handlers)}")


def test_broad_handlers_say_why():
    silent = [handler for handler in _broad_handlers() if not _has_comment(handler[2])]
    assert not silent, (
        "each broad handler says on its own line why it catches everything:\n"
        + _listing(silent))


def test_detects_broad_handlers():
    tree = ast.parse(
        "try:\n    pass\nexcept:\n    pass\n"
        "try:\n    pass\nexcept (OSError, Exception):\n    pass\n"
        "try:\n    pass\nexcept BaseException as error:\n    pass\n"
        "try:\n    pass\nexcept (OSError, ValueError):\n    pass\n")
    handlers = [node for node in ast.walk(tree) if isinstance(node, ast.ExceptHandler)]
    assert [_is_broad(handler) for handler in handlers] == [True, True, True, False]
    assert _has_comment("except Exception:  # GDB calls in")
    assert not _has_comment("except Exception:")
    assert not _has_comment("x = '#' ; y = 1")


def test_a_file_cache_keeps_a_file_it_cannot_read_and_lets_a_bug_through(tmp_path):
    from jit_unwind.file_cache import FileCache
    path = tmp_path / "garbage"
    path.write_bytes(b"\0" * 16)
    cache = FileCache()

    def truncated(_path):
        raise struct.error("unpack requires a buffer of 64 bytes")

    assert cache.get(str(path), truncated, "failed") == "failed"

    def buggy(_path):
        raise TypeError("unsupported operand type(s)")

    with pytest.raises(TypeError):
        FileCache().get(str(path), buggy, "failed")


def test_pyelftools_errors_name_its_own_and_what_its_parsing_lets_through():
    import zlib
    from jit_unwind.elf.pyelftools_errors import pyelftools_errors
    from jit_unwind.target import MemoryReadError
    errors = pyelftools_errors(MemoryReadError)
    assert {MemoryReadError, OSError, struct.error, KeyError, AssertionError,
            zlib.error} <= set(errors)
    elftools = pytest.importorskip("elftools.common.exceptions")
    assert {elftools.ELFError, elftools.DWARFError} <= set(errors)
    assert not {Exception, BaseException, ImportError} & set(pyelftools_errors())
