"""GDB's JIT interface: ``__jit_debug_descriptor`` and its in-memory object files.

Code registered this way is already known to GDB (it builds objfiles from it), so the
unwinder leaves it alone; we only list it.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import io
import struct
from typing import List

from ..elf.pyelftools_errors import pyelftools_errors
from ..model import Region, RegionSource
from ..target import Memory, MemoryReadError

MAX_ENTRIES = 100_000
MAX_SYMFILE = 64 << 20


def read_jit_interface(memory: Memory, descriptor: int) -> List[Region]:
    """Regions of every object file registered through the descriptor at ``descriptor``.

    struct jit_descriptor { uint32 version, action_flag; entry *relevant, *first; }
    struct jit_code_entry { entry *next, *prev; const char *symfile_addr; uint64 size; }
    """
    regions: List[Region] = []
    try:
        entry = memory.read_u64(descriptor + 16)
    except MemoryReadError:
        return regions
    seen: set[int] = set()
    while entry and entry not in seen and len(seen) < MAX_ENTRIES:
        seen.add(entry)
        try:
            next_entry, _prev, symfile, size = struct.unpack("<QQQQ", memory.read(entry, 32))
        except MemoryReadError:
            break
        regions.extend(_symfile_regions(memory, symfile, size))
        entry = next_entry
    return regions


def _symfile_regions(memory: Memory, address: int, size: int) -> List[Region]:
    """Function symbols of one registered ELF image (empty if it cannot be parsed)."""
    if not 0 < size <= MAX_SYMFILE:
        return []
    from elftools.elf.elffile import ELFFile  # ImportError: the caller's to say
    from elftools.elf.sections import SymbolTableSection
    try:
        elf = ELFFile(io.BytesIO(memory.read(address, size)))
        regions = []
        relocatable = elf["e_type"] == "ET_REL"
        for section in elf.iter_sections():
            if section["sh_type"] != "SHT_SYMTAB" or not isinstance(section,
                                                                    SymbolTableSection):
                continue
            for symbol in section.iter_symbols():
                if symbol["st_info"]["type"] == "STT_FUNC" and symbol["st_size"]:
                    start = symbol["st_value"]
                    if relocatable and isinstance(symbol["st_shndx"], int):
                        # A relocatable object (LLVM's JITs register those): the value
                        # is an offset into its section, which the JIT gave an address.
                        start += elf.get_section(symbol["st_shndx"])["sh_addr"]
                    regions.append(Region(start, start + symbol["st_size"], RegionSource.GDB_JIT,
                                          symbol.name))
        return regions
    # Unreadable memory, or a half-written or foreign image: list nothing.
    except pyelftools_errors(MemoryReadError):
        return []
