"""What this LLDB can do that the plugin relies on."""

import lldb


def providers_supported() -> bool:
    """Scripted frame providers (LLDB 22+)."""
    return hasattr(lldb.SBTarget, "RegisterScriptedFrameProvider")
