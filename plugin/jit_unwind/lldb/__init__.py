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
    _keep_wrapper_environment_out(debugger)
    from . import frame_format
    frame_format.install(debugger, internal_dict)  # lldb-19's bt
    if registration.providers_supported():  # LLDB 22+; the commands work without
        from . import provider  # noqa: F401
        registration.install_registration(debugger)


def _keep_wrapper_environment_out(debugger: "lldb.SBDebugger") -> None:
    """lldb-for-pwndbg's wrapper sets PYTHONHOME etc. for LLDB's Python: not for the
    program LLDB launches (the core's rule says which are the wrapper's).  The setting
    applies to the targets there are and those made later; the user's
    target.env-vars still win over it."""
    import os
    import sys
    from ..wrapper_env import announced, kept_out_message, wrapper_variables
    names = wrapper_variables(os.environ, (sys.prefix, sys.exec_prefix),
                              os.path.dirname(lldb.__file__))
    if not names:
        return
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(
        "settings append target.unset-env-vars " + " ".join(names), result)
    if result.Succeeded() and announced():
        # LLDB's error stream (sys.stderr goes nowhere while a script is imported):
        # stdout is for the user's commands.
        message = kept_out_message(names, "LLDB") + "\n"
        error_file = debugger.GetErrorFile()
        if error_file.IsValid():
            error_file.Write(message.encode())
        else:
            print(message, end="")
