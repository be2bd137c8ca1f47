"""Files a debugger loads to start the plugin from an installed package:
``source .../loaders/gdb_init.py`` in GDB, ``command script import
.../loaders/lldb_init.py`` in LLDB (``jit-unwind install`` writes those lines)."""
