"""The variables of Python frames (``py-mixed-bt --locals``) read from memory.

Three sources: the memory of tests/fixtures/python/frame_locals.py stopped in every
interpreter we test (3.11 to 3.15, 3.13t, 3.14t), which must read as the fixture binds
its variables; that memory recorded and replayed with pointers spoilt, which must say
what it cannot read and read the rest; and objects laid out by hand after the C structs
(PyLongObject, PyUnicodeObject, _PyInterpreterFrame...), for what a short stop does not
show: huge ints, wide strings, tagged stack references, empty cells, the limits.
"""

import struct
from typing import Dict, Tuple

import pytest

from jit_unwind.cpython import PyVersion, find_runtime
from jit_unwind.cpython.dicts import object_layout
from jit_unwind.cpython.layout import static_layout
from jit_unwind.cpython.locals import (MAX_LOCALS, LocalsReader, locals_layout, reader_for,
                                       with_locals)
from jit_unwind.cpython.values import MAX_STR_CHARS, ValueReader, value_layout
from jit_unwind.model import PyFrame, PyThread
from jit_unwind.target import BytesMemory, Memory, MemoryReadError
from tests.jit_python import fixture_python
from tests.locals_expect import EXPECTED, OBJECT, SCRIPT
from tests.unit._proc import pyenv_python, stopped_python

INTERPRETERS = ["3.11.7", "3.12.1", "3.13.0", "3.13", "3.13t", "3.14", "3.14t", "3.15"]


def interpreter(name: str):
    return pyenv_python(name) if name.count(".") == 2 else fixture_python(name)


def read_all(memory: Memory, lookup):
    """``{function: FrameLocals}`` of the stopped fixture's only thread."""
    runtime = find_runtime(memory, lookup)
    reader, reason = reader_for(runtime)
    assert reader is not None, reason
    thread, = runtime.threads()
    return {frame.function: frame.locals for frame in with_locals(reader, thread).frames}


def check_expected(found) -> None:
    assert list(found) == list(EXPECTED)
    for function, frame_locals in found.items():
        assert frame_locals.error == "" and frame_locals.omitted == 0, frame_locals
        shown = [(v.name, v.kind, v.type_name, v.value) for v in frame_locals.variables]
        assert shown == [(name, kind, type_name, value if value is not OBJECT
                          else f"<{type_name} at {v.object:#x}>")
                         for (name, kind, type_name, value), v in zip(
                             EXPECTED[function], frame_locals.variables)], function


@pytest.mark.parametrize("name", INTERPRETERS)
def test_a_stopped_process_reads_as_the_fixture_binds(name):
    with stopped_python(interpreter(name), [], script=SCRIPT) as process:
        check_expected(read_all(process.memory, process.lookup()))


class Recording(Memory):
    """``memory``, keeping every read (the runtime reads whole pages through its cache)."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self.reads: Dict[int, bytes] = {}

    def read(self, address: int, size: int) -> bytes:
        data = self.memory.read(address, size)
        self.reads[address] = data
        return data


def patched(reads: Dict[int, bytes], address: int, word: int) -> BytesMemory:
    """The recorded reads with the 8 bytes at ``address`` replaced by ``word``."""
    segments = dict(reads)
    start = next(s for s, data in reads.items() if s <= address < s + len(data))
    data = bytearray(segments[start])
    data[address - start:address - start + 8] = struct.pack("<Q", word)
    segments[start] = bytes(data)
    return BytesMemory(segments)


@pytest.mark.parametrize("name", ["3.12.1", "3.14t"])
def test_recorded_memory_damaged_says_what_it_cannot_read(name):
    with stopped_python(interpreter(name), [], script=SCRIPT) as process:
        lookup = process.lookup()
        symbols = {symbol: lookup(symbol) for symbol in ("_PyRuntime", "Py_Version")}
        recording = Recording(process.memory)
        live = read_all(recording, lookup)
    reads = recording.reads
    check_expected(read_all(BytesMemory(reads), symbols.get))  # the recording is whole
    runtime = find_runtime(BytesMemory(reads), symbols.get)
    layout = reader_for(runtime)[0].layout
    frames = {f.function: f for f in runtime.threads()[0].frames}
    # inner's slot of widget points at memory that is not there: that variable says so,
    # the others read as before.
    names = [v.name for v in live["inner"].variables]
    slot = frames["inner"].address + layout.frame_localsplus + 8 * names.index("widget")
    found = read_all(patched(reads, slot, 0x7000), symbols.get)
    widget = found["inner"].variables[names.index("widget")]
    assert (widget.name, widget.type_name, widget.object) == ("widget", None, None)
    assert widget.value.startswith("<unreadable object at 0x7000: ")
    assert [v for v in found["inner"].variables if v.name != "widget"] == [
        v for v in live["inner"].variables if v.name != "widget"]
    # outer's code object names its variables with a tuple that is not there: outer
    # says why, the other frames are whole.
    names_field = frames["outer"].code_address + layout.code_names
    found = read_all(patched(reads, names_field, 0x7000), symbols.get)
    assert found["outer"].variables == () and found["outer"].error == (
        "cannot read the names of the variables (co_localsplusnames at 0x7000)")
    assert {f: v for f, v in found.items() if f != "outer"} == {
        f: v for f, v in live.items() if f != "outer"}


# -- objects laid out by hand (CPython 3.12's offsets, a GIL build) --------------------

BASE = 0x100000


class Heap:
    """Objects in one segment of memory, 16-aligned, as CPython 3.12 lays them out."""

    def __init__(self):
        self.data = bytearray()
        self.types: Dict[str, int] = {}

    def put(self, data: bytes) -> int:
        address = BASE + len(self.data)
        self.data += data + bytes(-len(data) % 16)
        return address

    def type(self, name: str) -> int:
        if name not in self.types:
            text = self.put(name.encode() + b"\0")
            self.types[name] = self.put(struct.pack("<3QQ", 1, 0, 0, text) + bytes(400))
        return self.types[name]

    def object(self, type_name: str, body: bytes) -> int:
        return self.put(struct.pack("<QQ", 1, self.type(type_name)) + body)

    def int(self, value: int, tagged: bool = True) -> int:
        magnitude, digits = abs(value), []
        while magnitude:
            digits.append(magnitude & (2 ** 30 - 1))
            magnitude >>= 30
        if tagged:  # 3.12+: lv_tag = digits << 3 | sign (0 positive, 1 zero, 2 negative)
            tag = len(digits) << 3 | (1 if value == 0 else 2 if value < 0 else 0)
        else:       # 3.11: ob_size carries the sign
            tag = (-len(digits) if value < 0 else len(digits)) & (2 ** 64 - 1)
        return self.object("int", struct.pack(f"<Q{len(digits)}I", tag, *digits))

    def str(self, text: str) -> int:
        """A compact str (state: kind at bit 2, compact bit 5, ascii bit 6)."""
        width = max((1, 2, 4)[(ord(c) > 0xFF) + (ord(c) > 0xFFFF)] for c in text or "a")
        ascii_only = text.isascii()
        state = width << 2 | 1 << 5 | ascii_only << 6
        encoded = text.encode({1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[width])
        header = struct.pack("<qqI4x", len(text), -1, state)  # length, hash, state
        if not ascii_only:  # PyCompactUnicodeObject: utf8_length, utf8
            header += struct.pack("<qQ", 0, 0)
        return self.object("str", header + encoded + b"\0" * width)

    def memory(self) -> BytesMemory:
        return BytesMemory({BASE: bytes(self.data)})


def layout_312(minor: int = 12):
    objects = object_layout(None, 0, static_layout(PyVersion(3, minor, 0)))
    return objects


def render(heap: Heap, address: int, minor: int = 12) -> Tuple[str, str]:
    return ValueReader(heap.memory(), value_layout(layout_312(minor))).render(address)


def test_scalars_read_as_their_repr():
    heap = Heap()
    cases = {
        heap.int(0): "0", heap.int(-12345678901): "-12345678901",
        heap.int(2 ** 100): str(2 ** 100),
        heap.object("bool", struct.pack("<QI", 1 << 3, 1)): "True",
        heap.object("bool", struct.pack("<Q", 1)): "False",
        heap.object("NoneType", b""): "None",
        heap.object("float", struct.pack("<d", -0.1)): "-0.1",
        heap.str("plain"): "'plain'", heap.str("é'\""): repr("é'\""),
        heap.str("Ωmega"): "'Ωmega'", heap.str("🐍 snake"): "'🐍 snake'",
        heap.str(""): "''",
        heap.object("bytes", struct.pack("<qq", 3, -1) + b"a\x00\xff\0"): r"b'a\x00\xff'",
    }
    for address, text in cases.items():
        assert render(heap, address)[1] == text


def test_other_objects_read_as_type_and_address():
    heap = Heap()
    address = heap.object("collections.OrderedDict", bytes(32))
    assert render(heap, address) == ("collections.OrderedDict",
                                     f"<collections.OrderedDict at {address:#x}>")


def test_long_values_are_cut():
    heap = Heap()
    text = heap.str("ab" * 1000)
    assert render(heap, text)[1] == repr("ab" * (MAX_STR_CHARS // 2)) + "... (2000 characters)"
    data = heap.object("bytes", struct.pack("<qq", 1000, -1) + b"z" * 1001)
    assert render(heap, data)[1] == repr(b"z" * 40) + "... (1000 bytes)"
    big = heap.int(7 ** 500)  # 1409 decimal digits, 47 digits of 30 bits: read, cut
    assert render(heap, big)[1] == str(7 ** 500)[:60] + "... (423 digits)"
    huge = heap.object("int", struct.pack("<Q", 10_000 << 3))  # its digits are not read
    assert render(heap, huge)[1] == f"<int at {huge:#x}: about 300000 bits>"


def test_a_311_int_keeps_its_sign_in_ob_size():
    heap = Heap()
    assert render(heap, heap.int(-(2 ** 40), tagged=False), minor=11)[1] == str(-(2 ** 40))


def test_unreadable_objects_say_so():
    heap = Heap()
    no_type = heap.put(struct.pack("<QQ", 1, 0))
    bad_string = heap.object("str", struct.pack("<qqI4x", 3, -1, 3 << 2 | 1 << 5))
    memory_gone = heap.object("float", b"")  # ob_fval past the end of memory
    assert render(heap, no_type) == (None, f"<unreadable object at {no_type:#x}: object at "
                                           f"{no_type:#x} has a bad type pointer 0x0>")
    assert render(heap, 0x40)[0] is None and render(heap, 0x40)[1].startswith(
        "<unreadable object at 0x40: ")
    assert render(heap, bad_string)[1].startswith(f"<str at {bad_string:#x}: unreadable: ")
    assert render(heap, memory_gone)[1].startswith(f"<float at {memory_gone:#x}: unreadable")


# -- a frame laid out by hand --------------------------------------------------------

LOCAL, CELL, FREE, HIDDEN = 0x20, 0x40, 0x80, 0x10


def frame_with(heap: Heap, slots) -> Tuple[LocalsReader, PyFrame]:
    """A code object and a frame whose localsplus are ``slots``: ``[(name, kind,
    word)]`` (3.12 offsets: localsplus at 72, co_localsplusnames at 96, kinds at 104)."""
    names = heap.object("tuple", struct.pack(f"<q{len(slots)}Q", len(slots),
                                             *(heap.str(name) for name, _, _ in slots)))
    kinds = heap.object("bytes", struct.pack("<qq", len(slots), -1)
                        + bytes(kind for _, kind, _ in slots) + b"\0")
    code = heap.object("code", bytes(96 - 16) + struct.pack("<QQ", names, kinds))
    frame = heap.put(bytes(72) + struct.pack(f"<{len(slots)}Q", *(w for _, _, w in slots)))
    layout = locals_layout(None, 0, static_layout(PyVersion(3, 12, 0)))
    return (LocalsReader(heap.memory(), layout),
            PyFrame(frame, "f", "f.py", 1, False, "thread", code, 0))


def test_slots_tagged_null_hidden_and_cells():
    heap = Heap()
    value = heap.int(9)
    cell = heap.object("cell", struct.pack("<Q", heap.str("inside")))
    empty_cell = heap.object("cell", struct.pack("<Q", 0))
    reader, frame = frame_with(heap, [
        ("plain", LOCAL, value),
        ("deferred", LOCAL, value | 1),           # 3.14+: a deferred/immortal reference
        ("counter", LOCAL, (-5 << 2 | 3) & (2 ** 64 - 1)),  # 3.14+: a tagged int
        ("unbound", LOCAL, 0),
        ("null_314", LOCAL, 1),                   # 3.14's PyStackRef_NULL
        ("comprehension", LOCAL | HIDDEN, value),
        ("shared", LOCAL | CELL, cell),
        ("argument_cell", LOCAL | CELL, value),   # a cell argument before MAKE_CELL
        ("not_yet", CELL, empty_cell),
        ("outside", FREE, cell),
    ])
    found = reader.frame_locals(frame)
    assert [(v.name, v.kind, v.value) for v in found.variables] == [
        ("plain", "local", "9"), ("deferred", "local", "9"), ("counter", "local", "-5"),
        ("shared", "cell", "'inside'"), ("argument_cell", "cell", "9"),
        ("outside", "free", "'inside'")]
    assert found.variables[2].object is None and found.variables[0].object == value


def test_the_number_of_variables_is_bounded():
    heap = Heap()
    value = heap.int(1)
    reader, frame = frame_with(heap, [(f"v{i}", LOCAL, value) for i in range(MAX_LOCALS + 5)])
    found = reader.frame_locals(frame)
    assert len(found.variables) == MAX_LOCALS and found.omitted == 5


def test_a_frame_without_a_code_object_says_so():
    heap = Heap()
    reader, frame = frame_with(heap, [])
    assert reader.frame_locals(frame).variables == ()
    broken = PyFrame(frame.address, "<unknown>", "<unknown>", None, False, "thread", 0, 0,
                     error="NULL code object")
    assert reader.frame_locals(broken).error == "its code object is unreadable"
    bogus = PyFrame(frame.address, "f", "f.py", 1, False, "thread", 0x40, 0)
    assert reader.frame_locals(bogus).error == "cannot read the code object at 0x40"


class FailingMemory(Memory):
    """A debugger none of whose memory can be read (``error``: what a read raises)."""

    def __init__(self, error=None):
        self.error = error

    def read(self, address: int, size: int) -> bytes:
        raise self.error or MemoryReadError(address, size)


def test_a_thread_keeps_its_frames_whatever_its_variables_do():
    heap = Heap()
    reader, frame = frame_with(heap, [("x", LOCAL, heap.int(1))])
    thread = PyThread(0x1000, 0, 1, 2, True, (frame,))
    failing = LocalsReader(FailingMemory(), reader.layout)
    shown, = with_locals(failing, thread).frames
    assert shown.function == "f"
    assert shown.locals.error == f"cannot read the code object at {frame.code_address:#x}"
    # An error outside Memory's contract is a bug: it is not taken for unreadable memory.
    broken = LocalsReader(FailingMemory(RuntimeError("the debugger went away")),
                          reader.layout)
    with pytest.raises(RuntimeError):
        with_locals(broken, thread)
    unsupported, = with_locals(None, thread, "no layout").frames
    assert unsupported.locals.error == "no layout"
    assert with_locals(reader, thread).frames[0].locals.variables[0].value == "1"
