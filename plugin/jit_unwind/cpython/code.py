"""Code objects: names, file, first line, location table, and lines of instructions."""

from ..records import record
from typing import Dict, Optional, Tuple

from ..target import Memory, MemoryReadError
from .errors import ObjectError
from .layout import Layout
from .linetable import line_for_index
from .objects import read_bytes, read_struct, read_type_name, read_unicode

__all__ = ["CodeInfo", "read_code", "CodeReader"]

MAX_CODE_UNITS = 1 << 24
MAX_TLBC_ENTRIES = 1 << 20  # copies of one code object's bytecode (one per thread index)


@record(frozen=True)
class CodeInfo:
    """What a frame needs from a ``PyCodeObject *``.

    ``code_start`` is ``&co->co_code_adaptive[0]``, the first ``_Py_CODEUNIT``; ``size``
    is ``Py_SIZE(co)``, the number of code units."""

    address: int
    name: str
    qualname: str
    filename: str
    firstlineno: int
    linetable: bytes
    code_start: int
    size: int

    tlbc: int = 0   # 3.14t: ``co_tlbc``, the ``_PyCodeArray *`` of bytecode copies

    def instruction_index(self, instr_address: int, start: Optional[int] = None) -> int:
        """Code units from the start of the bytecode (``start``: a thread's own copy of
        it, default ``code_start``) to ``instr_address``."""
        return (instr_address - (self.code_start if start is None else start)) // 2

    def contains(self, instr_address: int, start: Optional[int] = None) -> bool:
        """Whether ``instr_address`` is inside the bytecode (or one unit before it, where
        3.11/3.12 ``prev_instr`` points before the first instruction has run)."""
        return -1 <= self.instruction_index(instr_address, start) < self.size

    def line_of(self, instr_address: int, start: Optional[int] = None) -> Optional[int]:
        """Line of the instruction at ``instr_address``, as ``PyCode_Addr2Line`` does;
        None for a negative one (a corrupted ``co_firstlineno`` or line table)."""
        line = line_for_index(self.linetable, self.firstlineno,
                              self.instruction_index(instr_address, start))
        return line if line is None or line >= 0 else None


def read_code(memory: Memory, layout: Layout, address: int,
              check_type: bool = True) -> CodeInfo:
    """Read the ``PyCodeObject`` at ``address``; with ``check_type`` first make sure its
    type is named ``code`` (a wrong layout or a stale pointer fails here, loudly)."""
    if not address:
        raise ObjectError("NULL code object")
    if check_type:
        type_name = read_type_name(memory, layout, address)
        if type_name != "code":
            raise ObjectError(f"object at {address:#x} is a {type_name!r}, not a code "
                              "object")
    wanted = {
        "size": (layout.code_size, "q"),
        "filename": (layout.code_filename, "Q"),
        "name": (layout.code_name, "Q"),
        "qualname": (layout.code_qualname, "Q"),
        "linetable": (layout.code_linetable, "Q"),
        "firstlineno": (layout.code_firstlineno, "i"),
    }
    if layout.code_tlbc is not None:
        wanted["tlbc"] = (layout.code_tlbc, "Q")
    fields = read_struct(memory, address, wanted)
    if not 0 < fields["size"] <= MAX_CODE_UNITS:
        raise ObjectError(f"code object at {address:#x} has {fields['size']} code units")
    return CodeInfo(
        address=address,
        name=read_unicode(memory, layout, fields["name"]),
        qualname=read_unicode(memory, layout, fields["qualname"]),
        filename=read_unicode(memory, layout, fields["filename"]),
        firstlineno=fields["firstlineno"],
        linetable=read_bytes(memory, layout, fields["linetable"]),
        code_start=address + layout.code_adaptive,
        size=fields["size"],
        tlbc=fields.get("tlbc", 0),
    )


class CodeReader:
    """:func:`read_code` with a cache by address and a cache of type checks.

    Code objects can be freed and their memory reused while the program runs: build one
    reader per stop of the inferior and drop it when the inferior resumes."""

    def __init__(self, memory: Memory, layout: Layout):
        self.memory = memory
        self.layout = layout
        self._codes: Dict[int, CodeInfo] = {}
        self._code_types: Dict[int, bool] = {}
        self._lines: Dict[Tuple[int, int], Optional[int]] = {}
        self._copies: Dict[Tuple[int, int], Optional[int]] = {}

    def read(self, address: int) -> CodeInfo:
        """The code object at ``address``; raises ObjectError or MemoryReadError."""
        code = self._codes.get(address)
        if code is None:
            self._check_type(address)
            code = read_code(self.memory, self.layout, address, check_type=False)
            self._codes[address] = code
        return code

    def line_at(self, code: CodeInfo, instr_address: int, start: Optional[int]
                ) -> Optional[int]:
        """``code.line_of`` for an instruction of the bytecode that begins at ``start``
        (None outside it, or when ``start`` is None), cached: threads that run the same
        code stand at the same few instructions (a recursion, a pool of workers)."""
        if start is None or not code.contains(instr_address, start):
            return None
        key = (code.address, code.instruction_index(instr_address, start))
        if key not in self._lines:
            self._lines[key] = code.line_of(instr_address, start)
        return self._lines[key]

    def bytecode_start(self, code: CodeInfo, tlbc_index: int) -> Optional[int]:
        """Where the bytecode a frame runs starts: ``code_start``, or in 3.14t
        ``co_tlbc->entries[tlbc_index]`` (``_PyCodeArray {Py_ssize_t size; char
        *entries[]}``; entry 0 is ``co_code_adaptive`` itself).  None when that copy
        cannot be read."""
        if not tlbc_index:
            return code.code_start
        if not code.tlbc or tlbc_index < 0:
            return None
        key = (code.address, tlbc_index)
        if key not in self._copies:  # a thread's frames share its copies: read once
            size = self.memory.try_read_u64(code.tlbc)
            self._copies[key] = None if size is None or tlbc_index >= min(
                size, MAX_TLBC_ENTRIES) else (
                    self.memory.try_read_u64(code.tlbc + 8 + 8 * tlbc_index) or None)
        return self._copies[key]

    def _check_type(self, address: int) -> None:
        if not address:
            raise ObjectError("NULL code object")
        type_address = self.memory.read_u64(address + self.layout.ob_type)
        is_code = self._code_types.get(type_address)
        if is_code is None:
            try:
                is_code = read_type_name(self.memory, self.layout, address) == "code"
            except MemoryReadError:
                raise ObjectError(f"object at {address:#x} has an unreadable type "
                                  f"{type_address:#x}") from None
            self._code_types[type_address] = is_code
        if not is_code:
            raise ObjectError(f"object at {address:#x} is not a code object")
