"""The Python side's records (``PyFrame``, ``PyThread``, ``PyInterpreter``) live with the
core's other records in :mod:`jit_unwind.model`."""

from ..model import PyFrame, PyInterpreter, PyThread

__all__ = ["PyFrame", "PyThread", "PyInterpreter"]
