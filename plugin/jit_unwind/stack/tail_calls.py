"""The functions a native caller entered on the way to its callee by tail calls
(x86-64): the frames LLDB calls artificial, made from DWARF's call sites when it unwinds
a stack itself.  Below JIT code our walk finds the callers, so it finds these too, as
LLDB's call-site search does: the call before the return address enters a function
other than the callee's; that function (or one it jumps to) ends in a ``jmp`` to the
callee.  Only a unique path counts (LLDB gives up on two), and each frame is at the
address after its ``jmp``, where LLDB puts an artificial frame.  A ``jmp`` in code
inlined into the function is not one: LLDB reads only the call sites of the function
itself (CPython 3.13's ``_PyEval_Vector`` ends in one, which LLDB does not show); nor
is one in a function without DWARF (a stripped library's): LLDB has no call site there.
"""

from typing import Callable, List, Optional

from ..debugger import Symbol

CALL_REL32 = 0xE8
JMP_REL32 = 0xE9
MAX_FUNCTION_BYTES = 16384  # a tail-calling wrapper is small; a big function costs a read
MAX_FUNCTIONS = 16  # the search's functions, all paths together
MAX_DEPTH = 4


def _target(after: int, displacement: bytes) -> int:
    return (after + int.from_bytes(displacement, "little", signed=True)) & (2**64 - 1)


class TailCalls:
    def __init__(self, read: Callable[[int, int], Optional[bytes]],
                 symbol_at: Callable[[int], Optional[Symbol]],
                 call_site_at: Callable[[int], bool]):
        """``read(address, size)``: memory or None; ``symbol_at``: the symbol holding
        an address; ``call_site_at``: whether debug information describes a call site
        of the function's own there (not inlined code's, not a function without
        DWARF): LLDB makes artificial frames from those alone."""
        self.read = read
        self.symbol_at = symbol_at
        self.call_site_at = call_site_at

    def between(self, return_address: int, callee_start: int) -> List[int]:
        """The return addresses of the tail-calling frames between a caller returning to
        ``return_address`` and its callee (a function starting at ``callee_start``),
        innermost first; [] when the call entered the callee itself, or the path is not
        one."""
        call = self.read(return_address - 5, 5)
        if call is None or call[0] != CALL_REL32:
            return []
        entered = _target(return_address, call[1:])
        if entered == callee_start:
            return []
        paths: List[List[int]] = []
        self._search(entered, callee_start, [], paths, set())
        return list(reversed(paths[0])) if len(paths) == 1 else []

    def _search(self, start: int, callee_start: int, path: List[int],
                paths: List[List[int]], visited: set) -> None:
        """Each path of ``jmp``s from the function at ``start`` to ``callee_start``;
        stops at two (ambiguous, as LLDB's search does)."""
        if start in visited or len(visited) >= MAX_FUNCTIONS or len(path) >= MAX_DEPTH:
            paths.extend(([], []))  # unsure: no frame rather than a wrong one
            return
        visited.add(start)
        body = self._function_body(start)
        if body is None:
            return
        offset = body.find(JMP_REL32)
        while 0 <= offset <= len(body) - 5 and len(paths) < 2:
            after = start + offset + 5
            destination = _target(after, body[offset + 1:offset + 5])
            if not self._tail_call(start, len(body), destination, after):
                pass
            elif destination == callee_start:
                paths.append(path + [after])
            else:
                self._search(destination, callee_start, path + [after], paths, visited)
            offset = body.find(JMP_REL32, offset + 1)

    def _tail_call(self, start: int, size: int, destination: int, after: int) -> bool:
        """A ``jmp`` ending at ``after`` (to ``destination``) that LLDB would take as
        the function's own tail call: to another function's start, at a call site its
        debug information describes."""
        return (not start <= destination < start + size and self._starts(destination)
                and self.call_site_at(after - 1))

    def _function_body(self, start: int) -> Optional[bytes]:
        symbol = self.symbol_at(start)
        if symbol is None or symbol.start != start or symbol.end is None:
            return None
        size = symbol.end - start
        if not 0 < size <= MAX_FUNCTION_BYTES:
            return None
        return self.read(start, size)

    def _starts(self, address: int) -> bool:
        symbol = self.symbol_at(address)
        return symbol is not None and symbol.start == address
