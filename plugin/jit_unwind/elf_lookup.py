"""Find symbols and sections of mapped ELF files without a debugger's help.

Used where the debugger has no symbol: a stripped CPython keeps ``_PyRuntime`` in its own
``.PyRuntime`` section, which pyelftools finds in the file; the mappings say where the
file is loaded.
"""

from typing import Dict, Iterable, Optional, Tuple

from .regions import Mapping

_sections: Dict[Tuple[str, str], Optional[Tuple[int, list]]] = {}


def _section_and_loads(path: str, section_name: str):
    """(section address, [(p_vaddr, p_offset)] of PT_LOADs) of a file, cached."""
    key = (path, section_name)
    if key not in _sections:
        try:
            from elftools.elf.elffile import ELFFile
            with open(path, "rb") as handle:
                elf = ELFFile(handle)
                section = elf.get_section_by_name(section_name)
                loads = [(seg["p_vaddr"], seg["p_offset"]) for seg in elf.iter_segments()
                         if seg["p_type"] == "PT_LOAD"]
                _sections[key] = (section["sh_addr"], loads) if section is not None else None
        except Exception:  # not ELF, unreadable, pyelftools missing: no answer
            _sections[key] = None
    return _sections[key]


def load_bias(mapping: Mapping, loads) -> Optional[int]:
    """How far the file was moved from its link addresses, from one of its mappings."""
    for vaddr, offset in loads:
        if offset <= mapping.offset and (mapping.offset - offset) % 0x1000 == 0:
            candidate = mapping.start - (vaddr + mapping.offset - offset)
            if candidate % 0x1000 == 0:
                return candidate
    return None


def section_address(mappings: Iterable[Mapping], section_name: str,
                    path_hint: str = "") -> Optional[int]:
    """Run-time address of ``section_name`` in the first mapped file that has it."""
    mappings = list(mappings)
    seen = set()
    for mapping in mappings:
        path = mapping.path
        if not path.startswith("/") or path in seen or path_hint not in path:
            continue
        seen.add(path)
        found = _section_and_loads(path, section_name)
        if found is None:
            continue
        address, loads = found
        file_mappings = [m for m in mappings if m.path == path]
        bias = load_bias(min(file_mappings, key=lambda m: m.offset), loads)
        if bias is not None:
            return address + bias
    return None
