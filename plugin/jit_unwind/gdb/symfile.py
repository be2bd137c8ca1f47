"""Load the symbol file of this stop's JIT code into GDB (``add-symbol-file FILE -o 0``)
and replace it when the named regions change (``remove-symbol-file FILE``).

Runs only at safe points: after a stop, before a prompt, when the plugin loads (a core
given on GDB's command line), when GDB has read the object files of a core it is loading
(``core-file`` in a batch script has no prompt after it), when the setting changes, and
from our own commands.
Never inside the unwinder or a frame filter: adding an object file resets GDB's frame
cache, which must not happen while GDB is building or printing frames.
"""

import os

import gdb

from ..commands import settings
from ..regions.corefile import last_library_without_vdso
from ..symfile import SymbolFiles
from .interrupt import on_every_event, passes_interrupt
from .log import debug_log
from .state import OWN_FILES, STATE

# No .eh_frame: GDB runs the plugin's unwinder before it reads one, and decoding the
# rules of every function of a 10,000-line perf map cost more than GDB's own load.
# Names in a language GDB prints as written (its Ada decoder read "x.py" as "x[py]").
FILES = SymbolFiles(unwind_rules=False, names_for_gdb=True)


def refresh(*_args) -> None:
    """Load, replace or unload the symbol file for the current stop; never raises."""
    try:
        old, new = FILES.plan_for_stop(STATE.process, STATE,
                                       bool(settings.value("symbol-file")))
    except Exception as error:  # GDB's events and commands call in: never break a stop
        debug_log(f"symbol file: {error!r}")
        return
    _replace(old, new)


def unload(*_args) -> None:
    _replace(FILES.unload(), None)


def _replace(old, new) -> None:
    if old:
        try:
            with OWN_FILES.removing_one():
                gdb.execute(f'remove-symbol-file "{old}"', to_string=True)
        except gdb.error as error:  # already gone (the program space was reset)
            debug_log(f"remove-symbol-file: {error}")
        FILES.delete(old)
    if new:
        OWN_FILES.add(new)
        try:
            # -o 0: the file's addresses are the process's; no query, no output.
            gdb.execute(f'add-symbol-file "{new}" -o 0', to_string=True)
            debug_log(f"symbol file {new} loaded")
        except gdb.error as error:
            debug_log(f"add-symbol-file: {error}")
            FILES.failed(new)


def exiting(*_args) -> None:
    """GDB exits: remove the files (GDB drops its object files itself)."""
    FILES.cleanup()


# GDB names the vDSO's object file so; on Linux it adds it when the inferior is set up,
# after the executable and the shared libraries: a core's last object file.
VDSO = "system-supplied DSO at "


def _on_new_objfile(event) -> None:
    """GDB loads a core: after its last object file (the vDSO; in a core without one,
    qemu's, the last library of the dynamic linker's list) the regions and runtimes
    can be read, and a batch script's ``core-file`` is followed by no prompt.  A live
    process's object files come at the dynamic loader's internal stops, before the user
    sees one: those wait for the stop."""
    filename = getattr(event.new_objfile, "filename", None) or ""
    try:
        if STATE.process.connection() != "core" or not OWN_FILES.changes_regions(filename):
            return
        if not filename.startswith(VDSO) and not _last_of_core(filename):
            return
    except gdb.error:
        return
    # The stop cache this fills serves the first bt; object files GDB's JIT interface
    # adds after the vDSO drop it, as any new object file does.
    refresh()


def _last_of_core(filename: str) -> bool:
    """``filename`` is the last library GDB loads of a core without a vDSO (by base
    name: GDB's path may be under its sysroot, or resolved through symbolic links)."""
    process = STATE.process
    core = process.core_file()
    if not core or not filename:
        return False
    last = last_library_without_vdso(core, process.sysroot(), process.executable_path())
    return bool(last) and os.path.basename(last) == os.path.basename(filename)


# Whether the stop and prompt listeners are connected (connect_stops).
STOPS_CONNECTED = [False]


def connect() -> None:
    # Ctrl-C while a handler runs is GDB's (interrupt.py): GDB would drop it.
    gdb.events.new_objfile.connect(passes_interrupt(_on_new_objfile))
    gdb.events.exited.connect(passes_interrupt(unload))
    gdb_exiting = getattr(gdb.events, "gdb_exiting", None)
    if gdb_exiting is not None:
        gdb_exiting.connect(passes_interrupt(exiting))


def connect_stops() -> None:
    """Refresh at every stop and prompt from now on: called once the session meets JIT
    code (the unwinder, at the stop's first frame) or the plugin loads with a process.
    Not before: GDB 13 moves a Ctrl-C it holds into Python whenever a stop listener
    runs, Python raises it as the listener starts (before any handler of ours), and GDB
    prints and drops it, so a program without JIT code could not be interrupted in a
    breakpoint's commands (gdb.base/bp-cmds-continue-ctrl-c.exp)."""
    if STOPS_CONNECTED[0]:
        return
    STOPS_CONNECTED[0] = True
    on_stop = on_every_event(refresh)
    gdb.events.stop.connect(on_stop)
    before_prompt = getattr(gdb.events, "before_prompt", None)
    if before_prompt is not None:
        before_prompt.connect(on_stop)
