"""CPython version numbers as the runtime stores them.

``PY_VERSION_HEX`` packs ``major.minor.micro``, the release level and the serial into
32 bits: ``0x030D00F0`` is 3.13.0 final, ``0x030F00A3`` is 3.15.0a3.  CPython 3.11+
exports it as ``const unsigned long Py_Version``; 3.13+ also keeps it in
``_PyRuntime.debug_offsets.version``.
"""

import re
from ..records import record
from typing import Optional, Tuple, Union

__all__ = ["PyVersion", "as_version", "version_from_library_name"]

_LEVELS = {0xA: "a", 0xB: "b", 0xC: "rc", 0xF: ""}


@record(frozen=True, order=True)
class PyVersion:
    """A CPython version; ``str()`` gives ``3.13.0``, ``3.15.0a3`` or ``3.10``."""

    major: int
    minor: int
    micro: Optional[int] = None  # None when only major.minor is known
    level: int = 0xF             # 0xA alpha, 0xB beta, 0xC release candidate, 0xF final
    serial: int = 0

    @classmethod
    def from_hex(cls, value: int) -> "PyVersion":
        """Decode ``PY_VERSION_HEX`` (only the low 32 bits are used)."""
        value &= 0xFFFFFFFF
        return cls((value >> 24) & 0xFF, (value >> 16) & 0xFF, (value >> 8) & 0xFF,
                   (value >> 4) & 0xF, value & 0xF)

    @property
    def minor_version(self) -> Tuple[int, int]:
        return (self.major, self.minor)

    @property
    def is_final(self) -> bool:
        return self.level == 0xF

    def __str__(self) -> str:
        if self.micro is None:
            return f"{self.major}.{self.minor}"
        text = f"{self.major}.{self.minor}.{self.micro}"
        if self.level != 0xF:
            text += f"{_LEVELS.get(self.level, '?')}{self.serial}"
        return text


VersionLike = Union[PyVersion, Tuple[int, int], str, int]


def as_version(value: VersionLike) -> PyVersion:
    """Accept a :class:`PyVersion`, ``(3, 12)``, ``"3.12"`` / ``"3.12.1"`` or a hex int."""
    if isinstance(value, PyVersion):
        return value
    if isinstance(value, int):
        return PyVersion.from_hex(value)
    if isinstance(value, tuple):
        return PyVersion(value[0], value[1], *value[2:3])
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", value.strip())
    if match is None:
        raise ValueError(f"not a CPython version: {value!r}")
    micro = int(match.group(3)) if match.group(3) is not None else None
    return PyVersion(int(match.group(1)), int(match.group(2)), micro)


def version_from_library_name(path: str) -> Optional[PyVersion]:
    """``libpython3.10.so.1.0`` or ``.../bin/python3.12`` -> major.minor; None otherwise.

    A hint for adapters when the runtime has neither ``Py_Version`` nor debug offsets
    (CPython 3.10 and older), so the error can name the version."""
    match = re.search(r"(?:^|/)(?:lib)?python(\d)\.(\d+)[a-z]*(?:\.so|$|[^/\d])",
                      path)
    if match is None:
        return None
    return PyVersion(int(match.group(1)), int(match.group(2)))
