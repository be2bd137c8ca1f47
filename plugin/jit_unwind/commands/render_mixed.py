"""Text and JSON for ``py-mixed-bt``: no debugger I/O here, callers print the strings."""

from typing import Any, Dict, List, Optional

from ..stack.frame_label import listed_label, python_line
from ..model import FrameLocals, MixedFrame, MixedThread, PyFrame

FORMAT = "jit-unwind/py-mixed-bt/1"


def thread_heading(thread: MixedThread) -> str:
    parts = [f"Thread {thread.number} (LWP {thread.lwp})"]
    name = thread.python_name or thread.name
    if name:
        parts.append(f'"{name}"')
    if thread.python is None:
        parts.append("[Python state not in the dump]" if thread.python_missing
                     else "[no Python]")
    elif thread.python.holds_gil:
        parts.append("[holds the GIL]")
    if thread.python is not None and thread.python.state:
        parts.append(f"[{thread.python.state}]")
    return " ".join(parts) + ":"


def _python_lines(frame: PyFrame, indent: str) -> List[str]:
    """The frame's line, then (``--locals``) one ``name = value`` line per variable."""
    return [f"{indent}{python_line(frame)}", *locals_lines(frame.locals, indent + "    ")]


def locals_lines(found: Optional[FrameLocals], indent: str) -> List[str]:
    """A frame's variables as ``py-mixed-bt --locals`` shows them (none when they were
    not asked for)."""
    if found is None:
        return []
    if found.error:
        return [f"{indent}(locals unreadable: {found.error})"]
    lines = [f"{indent}{variable.name} = {variable.value}" for variable in found.variables]
    if found.omitted:
        lines.append(f"{indent}... and {found.omitted} more")
    return lines


def _native_line(frame: MixedFrame, show_method: bool) -> str:
    native = frame.native
    text = f"#{native.level:<3} {listed_label(native, show_method).text()}"
    if native.filename:
        text += f" at {native.filename}"
        if native.line:
            text += f":{native.line}"
    return text


def render_text(threads: List[MixedThread], python_only: bool = False,
                show_method: bool = False) -> str:
    """The compact text of ``py-mixed-bt``: native frames with their Python frames under
    them, or (``python_only``) just the Python frames."""
    lines = []
    for thread in threads:
        lines.append(thread_heading(thread))
        if python_only:
            frames = thread.python.frames if thread.python is not None else ()
            for f in frames:
                lines += _python_lines(f, "  ")
            if thread.python is not None and thread.python.stop_reason:
                lines.append(f"  (Python frames end: {thread.python.stop_reason})")
        else:
            for frame in thread.frames:
                lines.append(_native_line(frame, show_method))
                for f in frame.python:
                    lines += _python_lines(f, "     ")
            if thread.stop_reason:
                lines.append(f"(backtrace stopped: {thread.stop_reason})")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _python_json(frame: PyFrame) -> Dict:
    data: Dict[str, Any] = {"function": frame.function, "file": frame.filename,
                            "line": frame.line, "is_entry": frame.is_entry,
                            "address": frame.address}
    if frame.error:
        data["error"] = frame.error
    if frame.locals is not None:
        data["locals"] = _locals_json(frame.locals)
    return data


def _locals_json(found: FrameLocals) -> Dict:
    data = {"variables": [{"name": v.name, "kind": v.kind, "type": v.type_name,
                           "value": v.value, "address": v.object}
                          for v in found.variables],
            "omitted": found.omitted}
    if found.error:
        data["error"] = found.error
    return data


def _native_json(frame: MixedFrame) -> Dict:
    native = frame.native
    data = {"level": native.level, "kind": native.kind.value, "pc": native.pc,
            "function": native.function, "file": native.filename, "line": native.line,
            "guess": native.guess, "stop_reason": native.stop_reason or None,
            "python": [_python_json(f) for f in frame.python]}
    if native.name is None and native.library:
        data["library"] = native.library
    return data


def to_json(threads: List[MixedThread], python_version: Optional[str],
            python_only: bool = False, note: str = "") -> str:
    """One JSON document (schema: docs/py-mixed-bt.schema.json); ``note`` says when the
    runtime is not initialised yet, finalizing or finalized."""
    document: Dict[str, Any] = {"format": FORMAT, "python_version": python_version,
                                "threads": []}
    if note:
        document["runtime_note"] = note
    for thread in threads:
        python = thread.python
        item = {"number": thread.number, "lwp": thread.lwp, "name": thread.name,
                "python_name": thread.python_name,
                "python_thread_id": python.thread_id if python else None,
                "holds_gil": python.holds_gil if python else None,
                "state": python.state if python else None,
                "python": [_python_json(f) for f in python.frames] if python else []}
        if not python_only:
            item["frames"] = [_native_json(f) for f in thread.frames]
            item["stop_reason"] = thread.stop_reason or None
        document["threads"].append(item)
    import json  # only for --json: a millisecond of the text command's first run
    return json.dumps(document, indent=2)
