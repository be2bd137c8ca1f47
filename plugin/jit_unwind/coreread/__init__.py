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

from .image import CoreImage
from .memory import CoreMemory
from .process import CoreProcess, open_core

__all__ = ["CoreImage", "CoreMemory", "CoreProcess", "open_core"]
