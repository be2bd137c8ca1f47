"""Unwind strategies for JIT frames and code without CFI (``strategies``), and what
they are built from (``x86_64`` decoding, ``context``, one module per strategy).

The names below come from ``strategies`` when first used: importing a part of this
package (the symbol file's writer needs ``x86_64`` only) does not load every strategy,
which keeps the plugin's load short.
"""

__all__ = ["APPLIES", "NOCFI_STRATEGIES", "STRATEGIES", "TRACE_STRATEGIES",
           "UnwindContext", "unwind_jit_frame", "unwind_kept_frame_pointer",
           "unwind_nocfi_frame", "unwind_registered_trace"]


def __getattr__(name):
    if name in __all__:
        from . import strategies
        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
