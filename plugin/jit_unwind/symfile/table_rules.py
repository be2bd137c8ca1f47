"""``.eh_frame`` rules for JIT code whose JIT gave its own (a jitdump's unwinding
records): the writer's FDEs, decoded (``unwind/cfi_rows``, as the jitdump-cfi strategy
reads them) and written again for the symbol file's CIE (code alignment 1, data alignment -8,
return address in column 16) with absolute addresses.

Decoded rows rather than the writer's bytes: its CIE may use other alignment factors
and its pointers count from where perf would put the section.  A rule this writer cannot
say exactly (an offset that is no multiple of 8, a kind it does not know) leaves that
FDE out: the debugger then has no rule there rather than a wrong one.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

from .eh_frame import (DATA_ALIGN, DW_CFA_def_cfa, DW_CFA_def_cfa_expression,
                       DW_CFA_def_cfa_sf, DW_CFA_expression, DW_CFA_offset,
                       DW_CFA_offset_extended_sf, DW_CFA_register, DW_CFA_restore,
                       DW_CFA_restore_extended, DW_CFA_same_value, DW_CFA_undefined,
                       DW_CFA_val_expression, DW_CFA_val_offset_sf, advance_loc, sleb128,
                       uleb128)

MAX_FDES_PER_FUNCTION = 64  # a function's code has one FDE, a few with cold parts
MAX_ROWS = 4096

Placed = Tuple[int, int, bytes]  # (pc_begin, pc_range, CFA program)


class _Unsayable(Exception):
    """A rule our CIE cannot state exactly."""


def _factored(offset: int) -> int:
    if offset % DATA_ALIGN:
        raise _Unsayable(offset)
    return offset // DATA_ALIGN


def _cfa(rule) -> bytes:
    expression = getattr(rule, "expr", None)
    if expression is not None:
        code = bytes(expression)
        return bytes([DW_CFA_def_cfa_expression]) + uleb128(len(code)) + code
    if rule.reg is None or rule.offset is None:
        raise _Unsayable(rule)
    if rule.offset >= 0:
        return bytes([DW_CFA_def_cfa]) + uleb128(rule.reg) + uleb128(rule.offset)
    return bytes([DW_CFA_def_cfa_sf]) + uleb128(rule.reg) + sleb128(_factored(rule.offset))


def _register(number: int, rule) -> bytes:
    kind, arg = rule.type, rule.arg
    if kind == "OFFSET":
        factored = _factored(arg)
        if 0 <= factored and number < 64:
            return bytes([DW_CFA_offset | number]) + uleb128(factored)
        return bytes([DW_CFA_offset_extended_sf]) + uleb128(number) + sleb128(factored)
    if kind == "VAL_OFFSET":
        return bytes([DW_CFA_val_offset_sf]) + uleb128(number) + sleb128(_factored(arg))
    if kind == "REGISTER":
        return bytes([DW_CFA_register]) + uleb128(number) + uleb128(arg)
    if kind == "SAME_VALUE":
        return bytes([DW_CFA_same_value]) + uleb128(number)
    if kind == "UNDEFINED":
        return bytes([DW_CFA_undefined]) + uleb128(number)
    if kind in ("EXPRESSION", "VAL_EXPRESSION"):
        code = bytes(arg)
        opcode = DW_CFA_expression if kind == "EXPRESSION" else DW_CFA_val_expression
        return bytes([opcode]) + uleb128(number) + uleb128(len(code)) + code
    raise _Unsayable(kind)


def _restore(number: int) -> bytes:
    if number < 64:
        return bytes([DW_CFA_restore | number])
    return bytes([DW_CFA_restore_extended]) + uleb128(number)


def _same(a, b) -> bool:
    return (a is b) or (a is not None and b is not None and repr(a) == repr(b))


def program_of_rows(rows, start: int) -> Optional[bytes]:
    """The CFA program stating ``rows`` (``cfi_rows``' decoded table of an FDE that
    starts at ``start``) from the symbol file's CIE state; None when a rule cannot be
    said exactly."""
    if len(rows) > MAX_ROWS:  # the rest of the range would keep the last row's rules
        return None
    out = bytearray()
    location = start
    previous: dict = {}  # the rules of the row before (cfi_rows' rows are dicts)
    try:
        for row in rows:
            changes = bytearray()
            if not _same(previous.get("cfa"), row["cfa"]):
                changes += _cfa(row["cfa"])
            numbers = {key for key in row if isinstance(key, int)}
            numbers |= {key for key in previous if isinstance(key, int)}
            for number in sorted(numbers):
                rule = row.get(number)
                if rule is None:  # restored to the writer's CIE, which (as ours) has
                    if previous.get(number) is not None:  # no rule for it
                        changes += _restore(number)
                elif not _same(previous.get(number), rule) or not previous:
                    changes += _register(number, rule)
            if changes:
                if row["pc"] < location:
                    return None
                out += (advance_loc(row["pc"] - location) if row["pc"] > location else b"")
                out += changes
                location = row["pc"]
            previous = row
    except (_Unsayable, ValueError, AttributeError, KeyError, TypeError):
        return None
    return bytes(out)


class JitdumpRules:
    """The writer's rules for the functions of one symbol file, read once per distinct
    table: every trampoline of CPython's ``-X perf_jit`` has the same ``.eh_frame``
    bytes at the same distance from its code, so one parse (a fraction of
    a millisecond each) serves thousands of functions.  At most ``MAX_PARSES`` distinct
    tables are read for a file; functions beyond them are decoded as without a record."""

    MAX_PARSES = 1000

    def __init__(self, record_at: Callable[[int], Any]):  # a jitdump CodeLoad, or None
        self._record_at = record_at
        self._relative: Dict[Tuple[bytes, int, int], Optional[List[Placed]]] = {}

    def __call__(self, start: int, end: int) -> Optional[List[Placed]]:
        """(pc_begin, pc_range, program) per FDE inside the function at [start, end)
        when a jitdump unwinding record covers it; None otherwise (the caller decodes
        the code instead)."""
        record = self._record_at(start)
        unwinding = getattr(record, "unwinding", None)
        if unwinding is None:
            return None
        key = (unwinding.eh_frame, record.eh_frame_address - start, end - start)
        if key not in self._relative:
            if len(self._relative) >= self.MAX_PARSES:
                return None
            self._relative[key] = _relative_rules(
                unwinding.eh_frame, record.eh_frame_address, start, end)
        relative = self._relative[key]
        if not relative:
            return relative
        return [(start + offset, size, program) for offset, size, program in relative]


def _relative_rules(eh_frame: bytes, eh_frame_address: int, start: int, end: int
                    ) -> List[Placed]:
    """The FDEs inside [start, end) as (offset from start, pc_range, program)."""
    from ..unwind.jitdump_cfi import read_fdes  # only with such records
    placed: List[Placed] = []
    for fde_start, fde_end, rows in read_fdes(eh_frame, eh_frame_address):
        if fde_end <= start or fde_start >= end:
            continue
        if len(placed) >= MAX_FDES_PER_FUNCTION or not (start <= fde_start < fde_end <= end):
            return placed  # an FDE beyond the function's code: not ours to state
        program = program_of_rows(rows, fde_start)
        if program is not None:
            placed.append((fde_start - start, fde_end - fde_start, program))
    return placed
