"""The LLDB adapter: the only package (with ``gdb/``) that imports a debugger.

``install(debugger, internal_dict)`` adds the commands ``jit-regions``, ``py-mixed-bt``
and ``jit-unwind`` (settings) and, on LLDB 22+, the frame provider on every target."""

import lldb


def install(debugger: "lldb.SBDebugger", internal_dict: dict) -> None:
    import jit_unwind
    internal_dict["jit_unwind"] = jit_unwind  # LLDB resolves class names there
    from . import commands, registration
    commands.add_commands(debugger)
    from . import symfile
    symfile.install(debugger)  # names JIT code outside bt too
    from . import settings, state
    settings.on_change("jitdump", lambda _debugger, _value: state.CACHES.invalidate())
    settings.on_change("symbol-file",
                       lambda debugger, _value: symfile.refresh(debugger.GetSelectedTarget()))
    from . import frame_format
    frame_format.install(debugger, internal_dict)  # lldb-19's bt
    if registration.providers_supported():  # LLDB 22+; the commands work without
        from . import provider  # noqa: F401
        registration.install_registration(debugger)
