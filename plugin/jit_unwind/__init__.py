"""jit-unwind: correct, readable backtraces through JIT-compiled code.

The package is split into a debugger-independent core (everything here except the
``gdb`` sub-package) and thin adapters that are the only modules importing a debugger.
"""

__version__ = "0.1.0"
