"""A file's DWARF sections as the reader needs them: pyelftools' view with each section
read when first used (and the ones no backtrace needs never), and ``.debug_aranges``."""

import io
from typing import List, Optional, Tuple

def read_aranges(data: bytes) -> List[Tuple[int, int, int]]:
    """(start, end, unit offset) of each range of ``.debug_aranges`` (32-bit DWARF,
    8-byte addresses; other sets are left out), sorted."""
    found = []
    at = 0
    while at + 12 <= len(data):
        length = int.from_bytes(data[at:at + 4], "little")
        if length == 0xFFFFFFFF:
            break  # 64-bit DWARF: the units are found without this table
        end = at + 4 + length
        unit = int.from_bytes(data[at + 6:at + 10], "little")
        address_size = data[at + 10]
        position = at + 12
        position += (-position) % 16  # tuples are aligned to twice the address size
        while address_size == 8 and position + 16 <= end:
            start = int.from_bytes(data[position:position + 8], "little")
            size = int.from_bytes(data[position + 8:position + 16], "little")
            position += 16
            if start == 0 and size == 0:
                break
            found.append((start, start + size, unit))
        at = end
    return sorted(found)


class _OnFirstRead:
    """A section's stream read (and decompressed) from the file when first used: most
    sections pyelftools opens are never looked at for a backtrace (libc's debug file
    holds megabytes of compressed location lists)."""

    def __init__(self, section, path: str):
        self._section = section
        self._path = path
        self._stream: Optional[io.BytesIO] = None

    def __getattr__(self, name):
        if self._stream is None:
            from .section_cache import section_bytes
            # BytesIO shares the bytes read
            self._stream = io.BytesIO(section_bytes(self._path, self._section))
        return getattr(self._stream, name)


def elf_file(handle):
    """pyelftools' ELFFile whose DWARF sections are read when first used."""
    from elftools.dwarf.dwarfinfo import DebugSectionDescriptor
    from elftools.elf.elffile import ELFFile

    class Lean(ELFFile):
        def _read_dwarf_section(self, section, relocate_dwarf_sections):
            return DebugSectionDescriptor(
                stream=_OnFirstRead(section, self.stream.name), name=section.name,
                global_offset=section["sh_offset"], size=section.data_size,
                address=section["sh_addr"])

    return Lean(handle)
