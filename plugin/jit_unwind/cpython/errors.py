"""Errors of the CPython runtime reader.

All derive from :class:`CPythonError` (itself a :class:`jit_unwind.target.JitUnwindError`),
and every message is one sentence meant for the user: adapters print ``str(error)`` and
never a traceback.
"""

from ..target import JitUnwindError

__all__ = ["CPythonError", "RuntimeNotFoundError", "UnsupportedVersionError", "LayoutError",
           "ObjectError"]


class CPythonError(JitUnwindError):
    """Root of the errors of :mod:`jit_unwind.cpython`."""


class RuntimeNotFoundError(CPythonError):
    """The inferior has no CPython runtime we can find (no ``_PyRuntime``, unreadable)."""


class UnsupportedVersionError(CPythonError):
    """A CPython version (or build flavour) whose layouts we do not know."""


class LayoutError(CPythonError):
    """The layout description does not match the inferior: bad cookie, a version field
    that disagrees with ``Py_Version``, or ``_Py_DebugOffsets`` that fail their checks."""


class ObjectError(CPythonError):
    """An object of the inferior is not what it should be: a frame's executable that is
    not a code object, a string with an absurd length.  Raised by the object readers and
    turned into :attr:`PyFrame.error` by the frame walk; it never ends a backtrace."""
