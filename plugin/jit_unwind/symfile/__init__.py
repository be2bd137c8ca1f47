"""A symbol file for the JIT code of this stop: an ELF the debugger loads so that JIT
functions have names everywhere (frame lines, ``info symbol``, ``x/i``, ``break``), and
for LLDB unwind rules (``.eh_frame``) for the code whose stack effect we decoded.

:class:`SymbolFiles` decides, once per stop, whether the named regions changed; if so
it writes a new file into a private temporary directory and tells the adapter which
file to unload and which to load.  The adapter does the loading (GDB's
``add-symbol-file``, LLDB's ``SBTarget.AddModule``) and calls :meth:`SymbolFiles.delete`
once the debugger has let go of the old file.
"""

from __future__ import annotations  # annotations unevaluated: less work at load

import atexit
import os
import re
from typing import Callable, Optional, Set, Tuple

from ..arch import X86_64
from ..model import Region

# The writer (.build) and the temporary directory's modules are imported when a file is
# first planned: most programs never have one, and they were a quarter of the plugin's
# load (bench/load_and_step.py).

__all__ = ["SymbolFiles"]

OUR_NAME = re.compile(r"jit-\d+-\d+\.elf")  # _new_path's file names


class SymbolFiles:
    """The symbol file of one debugger session: at most one is loaded at a time."""

    def __init__(self, prefix: str = "jit-unwind-", unwind_rules: bool = True,
                 names_for_gdb: bool = False):
        """``unwind_rules``: write ``.eh_frame`` for the code we can decode (LLDB's own
        unwinder needs it; GDB asks the plugin's unwinder first, which decodes the same
        rules for the frames a stack has, so a GDB file goes without).
        ``names_for_gdb``: names that GDB's demanglers leave as written
        (symfile/names_for_gdb.py; LLDB reads plain names as they are)."""
        self._prefix = prefix
        self._unwind_rules = unwind_rules
        self._names_for_gdb = names_for_gdb
        self._directory: Optional[str] = None
        self._count = 0
        self._key: Optional[Tuple] = None
        self.loaded: Optional[str] = None  # the file the debugger holds now
        self._functions: Tuple[Region, ...] = ()
        self._covered: Optional[Set[Region]] = None  # built when asked
        self._planned_for = None  # the region map of plan_for_stop's last plan

    def plan_for_stop(self, process, cache, enabled: bool
                      ) -> Tuple[Optional[str], Optional[str]]:
        """:meth:`plan` at a safe point of a stop, only when it can change something:
        with the setting off (``enabled``) or no process the loaded file goes; without
        a loaded file nothing is planned while nothing can be named (no runtime lookups
        on our account); one region map is planned for once (a stop, a prompt, a
        command: the same regions)."""
        if not enabled or process.pid() is None:
            return self.unload(), None
        if self.loaded is None and cache.nothing_to_name():
            return None, None  # as below, without reading the mappings (a stepi's stop)
        regions = cache.regions()
        if regions is self._planned_for:
            return None, None
        self._planned_for = regions
        return self.plan_stop(cache, process)

    def unload(self) -> Optional[str]:
        """:meth:`discard`, and plan again at the next stop (the process exited)."""
        self._planned_for = None
        return self.discard()

    def plan(self, process, cache) -> Tuple[Optional[str], Optional[str]]:
        """(file to unload, file to load) for this stop of ``process`` (a
        debugger.Process) with ``cache`` (its session.StopCache); (None, None) when the
        named regions are those of the loaded file."""
        if process.pid() is None:
            return self.discard(), None
        from .build import select, symbol_file_bytes
        regions = cache.named_regions()
        selection = select(regions)
        functions = selection.functions
        # Regions are frozen and a perf map's are reused while the file is unchanged,
        # so comparing with the last key is mostly identity checks.
        key = (process.pid(), tuple(functions))  # not key(): LLDB's changes at every stop
        if key == self._key:
            return None, None
        old = self.discard()
        self._key = key
        if not functions:
            return old, None
        data = symbol_file_bytes(process.memory, regions, functions,
                                 with_unwind_rules=self._unwind_rules, selection=selection,
                                 machine=getattr(process, "arch", X86_64).elf_machine,
                                 names_for_gdb=self._names_for_gdb)
        # On failure the old file is still unloaded (its names are stale), and the key is
        # kept: the next stops do not retry until the named regions change.
        path = self._new_path(process.pid())  # only once there is something to write
        if path is None:
            return old, None
        try:
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                      "wb") as out:
                out.write(data)
        except OSError:
            self.delete(path)
            return old, None
        self.loaded = path
        self._functions = key[1]
        return old, path

    def plan_stop(self, cache, process=None) -> Tuple[Optional[str], Optional[str]]:
        """plan() at a stop of ``process`` (default ``cache.process``): nothing to do
        while no file is loaded and nothing may name JIT code (no runtime lookups at
        every stop)."""
        if self.loaded is None and not cache.may_name_jit_code():
            return None, None
        return self.plan(process or cache.process, cache)

    def swap(self, old: Optional[str], new: Optional[str], unload: Callable[[str], None],
             load: Callable[[str], bool], keep_loaded_file: bool = True) -> None:
        """Carry out a plan: ``unload(old)`` then delete it; ``load(new)`` (False: the
        debugger would not), then delete it unless ``keep_loaded_file`` (a debugger
        that read it all, and may exit without running atexit handlers: its directory
        goes too when empty, after a failed load as well)."""
        if old:
            unload(old)
            self.delete(old)
        if not new:
            return
        if not load(new):
            self.failed(new)  # the file goes
        elif not keep_loaded_file:
            self.delete(new)
        if not keep_loaded_file:  # no atexit to count on: the emptied directory goes
            try:
                os.rmdir(os.path.dirname(new))
            except OSError:  # not empty, or gone
                pass

    def is_ours(self, path: str) -> bool:
        """``path`` is a symbol file such as this class writes (this session's or an
        earlier one's: a core saved by the debugger lists it)."""
        directory, name = os.path.split(path)
        directory = os.path.basename(directory)
        return (directory.startswith(self._prefix) and len(directory) > len(self._prefix)
                and OUR_NAME.fullmatch(name) is not None)

    def _new_path(self, pid: int) -> Optional[str]:
        if self._directory is None or not os.path.isdir(self._directory):
            from .directory import make_private_directory, remove_directory
            self._directory = make_private_directory(self._prefix)
            if self._directory is None:
                return None
            atexit.register(remove_directory, self._directory)
        self._count += 1
        return os.path.join(self._directory, f"jit-{pid}-{self._count}.elf")

    def discard(self) -> Optional[str]:
        """Forget the loaded file; returns it for the adapter to unload, then delete."""
        old, self.loaded = self.loaded, None
        self._key = None
        self._functions, self._covered = (), None
        return old

    def failed(self, path: str) -> None:
        """The debugger would not load ``path``: keep the key (no retry at every stop),
        drop the file."""
        if self.loaded == path:
            self.loaded = None
            self._functions, self._covered = (), None
        self.delete(path)

    def covers(self, region: Region) -> bool:
        """True when ``region`` is a function of the loaded symbol file."""
        if self._covered is None:
            self._covered = set(self._functions)
        return region in self._covered

    @staticmethod
    def delete(path: Optional[str]) -> None:
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass

    def cleanup(self) -> None:
        """Remove the directory and every file in it (the debugger exits)."""
        self.discard()
        if self._directory is not None:
            from .directory import remove_directory
            remove_directory(self._directory)
            self._directory = None
