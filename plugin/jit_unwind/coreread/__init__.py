"""A core file read without any debugger: what ``jit-unwind core --debugger none`` runs
``py-mixed-bt`` over.

``image``: the core's segments, mapped files and threads' registers (its notes).
``memory``: its memory, from the segments, else (as GDB) from the mapped files.
``symbols``: function symbols of the mapped ELF files (.symtab, .dynsym).
``dwarf``: names, inlined functions, files and lines from DWARF (the files' own or their
separate debug files), decoded per compilation unit as a pc needs it (``units``, ``dies``,
``lines``, ``sections``).
``frames``: each thread's frames, unwound as GDB's unwinder with jit-unwind would: JIT
code by the core's strategies, other code by its file's CFI.
``process``: the debugger interface (``jit_unwind.debugger``) over all of it.
"""

import importlib

# Imported on first use: the debuggers' unwinders import ``coreread.disk_cache`` alone
# (through elf_facts), and the reader's DWARF modules cost a first ``bt`` ~6 ms.
_EXPORTS = {"CoreImage": "image", "CoreMemory": "memory", "CoreProcess": "process",
            "open_core": "process"}


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = ["CoreImage", "CoreMemory", "CoreProcess", "open_core"]
