"""Names of Python threads (``threading.Thread.name``), read from a stopped process.

The path, per interpreter::

    PyInterpreterState -> sys.modules (3.11 ``modules``, 3.12+ ``imports.modules``)
      -> sys.modules["threading"] -> PyModuleObject.md_dict
      -> threading._active      dict: ident (int) -> Thread
         threading._main_thread  Thread (its ``_ident`` attribute is the key)
      -> Thread.__dict__["_name"] (a str)

Idents are ``threading.get_ident()``, the same value as :attr:`PyThread.thread_id`.
A thread started with ``_thread.start_new_thread`` has a name ("Dummy-N") only once it
has called ``threading.current_thread()``; before ``import threading`` no thread has
one.  Nothing raises: what cannot be read is left out.  Offsets: :mod:`.dicts`.
"""

from ..records import replace
import struct
from typing import Dict, Iterable, List, Optional

from ..target import JitUnwindError, Memory
from .dicts import (ObjectLayout, dict_get_str, find_module, object_layout,
                    read_attribute, read_dict_items, read_int, read_module_dict,
                    type_flags, UNICODE_SUBCLASS)
from ..model import PyThread
from .objects import read_unicode
from .runtime import CPythonRuntime

__all__ = ["read_thread_names", "read_interpreter_thread_names", "with_thread_names"]


def _thread_name(memory: Memory, objects: ObjectLayout, thread: int) -> Optional[str]:
    """``thread._name`` when it is a readable ``str``, else None."""
    try:
        name = read_attribute(memory, objects, thread, "_name")
        if name is None or not type_flags(memory, objects, name)[1] & UNICODE_SUBCLASS:
            return None
        return read_unicode(memory, objects.base, name)
    except JitUnwindError:
        return None


def read_interpreter_thread_names(memory: Memory, objects: ObjectLayout, interp: int
                                  ) -> Dict[int, str]:
    """``{ident: name}`` of the threads the ``threading`` module of the interpreter
    ``interp`` (a ``PyInterpreterState *``) knows: ``_active`` and ``_main_thread``."""
    names: Dict[int, str] = {}
    try:
        module = find_module(memory, objects, interp, "threading")
        if module is None:
            return names
        globals_dict = read_module_dict(memory, objects, module)
        active = dict_get_str(memory, objects, globals_dict, "_active")
        main = dict_get_str(memory, objects, globals_dict, "_main_thread")
    except JitUnwindError:
        return names
    try:
        items = read_dict_items(memory, objects, active) if active else []
    except JitUnwindError:
        items = []
    for key, thread in items:
        try:
            ident = read_int(memory, objects, key)
        except JitUnwindError:
            continue
        name = _thread_name(memory, objects, thread)
        if name is not None:
            names[ident] = name
    if main:
        try:
            ident_object = read_attribute(memory, objects, main, "_ident")
            main_ident = read_int(memory, objects, ident_object) if ident_object else None
        except JitUnwindError:
            main_ident = None
        if main_ident is not None and main_ident not in names:
            name = _thread_name(memory, objects, main)
            if name is not None:
                names[main_ident] = name
    return names


def read_thread_names(runtime: CPythonRuntime) -> Dict[int, str]:
    """``{threading.get_ident(): threading.Thread.name}`` for the stopped process of
    ``runtime``, every interpreter included (the main interpreter's name wins when an
    ident appears in several).  Empty when the process has no ``threading`` module or
    its memory cannot be read; never raises."""
    memory = runtime.memory
    try:
        objects = object_layout(memory, runtime.address, runtime.layout)
    except JitUnwindError:
        return {}
    interpreters, _ = runtime.interpreter_addresses()

    def is_main(interp: int) -> bool:
        data = memory.try_read(interp + runtime.layout.interp_id, 8)
        return data is not None and struct.unpack("<q", data)[0] == 0

    names: Dict[int, str] = {}
    for interp in sorted(interpreters, key=lambda address: not is_main(address)):
        for ident, name in read_interpreter_thread_names(memory, objects, interp).items():
            names.setdefault(ident, name)
    return names


def with_thread_names(threads: Iterable[PyThread], names: Dict[int, str]
                      ) -> List[PyThread]:
    """``threads`` with :attr:`PyThread.name` set from ``names`` (by ``thread_id``);
    threads without a name keep theirs."""
    return [replace(thread, name=names[thread.thread_id])
            if thread.thread_id in names else thread for thread in threads]
