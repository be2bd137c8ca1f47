"""A frame's source file as every backtrace shows it: a normalised absolute path where
the debugger knows the directory, the same for GDB and LLDB from the same DWARF."""

import os
from functools import lru_cache


# Kept by (name in the line table, the debugger's full name): a thread's frames run the
# same few files, and 32 threads the same ones again.
@lru_cache(maxsize=4096)
def shown_source_path(filename: str, full: str) -> str:
    """``full`` (the debugger's full name of line-table name ``filename``), normalised.
    GDB prefixes a relative compilation directory to a file name that already starts
    with it (glibc: "./nptl" + "./nptl/x.c"): then the line table's name, normalised."""
    if not os.path.isabs(filename) and full.endswith(filename):
        directory = os.path.normpath(full[:-len(filename)] or ".")
        if not os.path.isabs(directory) and \
                os.path.normpath(filename).startswith(directory + os.sep):
            return os.path.normpath(filename)
    return os.path.normpath(full)
