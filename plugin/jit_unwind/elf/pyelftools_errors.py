"""What pyelftools raises on a file or an image that is truncated, corrupted or in a form
it does not expect, and what reading its answers then raises: its own errors (ELFError,
with ELFParseError and ELFRelocationError, and DWARFError) are not all of them.
Corrupted files given to what the plugin asks of it (symbol tables, ``.eh_frame`` and
``.debug_frame`` entries, compilation units, line programs, DIE references) also made
it raise AssertionError (an augmentation string or a relocation it does not handle),
KeyError (an abbreviation code no table has), ValueError (an opcode no enumeration
names) and OverflowError (a seek past what a C long holds); struct.error, IndexError
and EOFError come from the bytes it reads, zlib.error from a compressed section.  The
values it parses take the types and fields the file's own forms and formats give them,
so a corrupted format makes the code reading them meet TypeError (a list where a line
program's directory index was an int) and AttributeError (a file entry without one).

ImportError (pyelftools not installed) is left to each caller: some say so."""

from __future__ import annotations  # annotations unevaluated: less work at load

from typing import Tuple, Type

from ..file_cache import FILE_ERRORS

_PYELFTOOLS = (AssertionError, TypeError, AttributeError)


def pyelftools_errors(*also: Type[BaseException]) -> Tuple[Type[BaseException], ...]:
    """The exceptions above and ``also``, for ``except pyelftools_errors(ImportError):``
    (evaluated only when an exception is raised: neither pyelftools nor zlib is imported
    before)."""
    import zlib
    found = also + FILE_ERRORS + _PYELFTOOLS + (zlib.error,)
    try:
        from elftools.common.exceptions import DWARFError, ELFError
    except ImportError:  # no pyelftools: none of its classes can have been raised
        return found
    return found + (ELFError, DWARFError)
