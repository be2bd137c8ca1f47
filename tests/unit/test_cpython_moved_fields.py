"""The process's _Py_DebugOffsets are the truth, not a table: a made-up CPython whose
structs have their fields where no release puts them is read right.

The memory below is a whole runtime in miniature (one interpreter, one thread, three
interpreter frames and an entry shim, two code objects with names, file and location
table) laid out with offsets that differ from every CPython release: moved thread-state
and frame fields, a bigger code object, another interpreter list head.
"""

import copy
import struct

from jit_unwind.cpython import find_runtime
from jit_unwind.cpython.debug_offsets import DEBUG_OFFSETS_LAYOUTS
from jit_unwind.target import BytesMemory
from tests.unit.test_cpython_debug_offsets import VALUES

SECTIONS = dict(DEBUG_OFFSETS_LAYOUTS[(3, 14)])["3.14"]
RUNTIME, INTERP, TSTATE, FRAMES, OBJECTS = 0x10000, 0x100000, 0x200000, 0x300000, 0x400000

MOVED = copy.deepcopy(VALUES)
MOVED["runtime_state"].update(interpreters_head=904)
MOVED["interpreter_state"].update(threads_head=8008, ceval_gil=24)
MOVED["thread_state"].update(size=960, current_frame=104, thread_id=312,
                             native_thread_id=320)
MOVED["interpreter_frame"].update(size=104, previous=24, executable=8, instr_ptr=48,
                                  owner=90)
MOVED["code_object"].update(size=256, filename=144, name=152, qualname=160,
                            linetable=168, firstlineno=84, co_code_adaptive=240)


class Image:
    """Zero-filled segments written word by word."""

    def __init__(self):
        self.segments = {}

    def put(self, address, data):
        base = max((s for s in self.segments if s <= address), default=None)
        if base is None or address + len(data) > base + len(self.segments[base]):
            raise AssertionError(f"no segment for {address:#x}")
        segment = self.segments[base]
        segment[address - base:address - base + len(data)] = data

    def u64(self, address, value):
        self.put(address, struct.pack("<Q", value))

    def memory(self):
        return BytesMemory({start: bytes(data) for start, data in self.segments.items()})


def debug_offsets(version_hex):
    values = [version_hex, 0]
    for section, fields in SECTIONS:
        values += [MOVED[section][field] for field in fields]
    return b"xdebugpy" + struct.pack(f"<{len(values)}Q", *values)


class Objects:
    """Strings, bytes, a type named "code" and code objects, bump-allocated."""

    def __init__(self, image):
        self.image = image
        self.next = OBJECTS
        self.code_type = self.alloc(64)
        name = self.alloc(16)
        image.put(name, b"code\0")
        image.u64(self.code_type + 24, name)   # tp_name

    def alloc(self, size):
        address = self.next
        self.next += (size + 15) // 16 * 16
        return address

    def string(self, text):
        data = text.encode("ascii")
        address = self.alloc(40 + len(data) + 1)
        self.image.u64(address + 16, len(data))                       # length
        self.image.put(address + 32, struct.pack("<I", 0x64))        # compact ascii
        self.image.put(address + 40, data)
        return address

    def bytes_object(self, data):
        address = self.alloc(32 + len(data) + 1)
        self.image.u64(address + 16, len(data))
        self.image.put(address + 32, data)
        return address

    def code(self, qualname, filename, firstlineno, linetable, units):
        fields = MOVED["code_object"]
        address = self.alloc(fields["size"] + 2 * units)
        self.image.u64(address + 8, self.code_type)
        self.image.u64(address + 16, units)                     # ob_size
        self.image.u64(address + fields["filename"], self.string(filename))
        self.image.u64(address + fields["name"], self.string(qualname.split(".")[-1]))
        self.image.u64(address + fields["qualname"], self.string(qualname))
        self.image.u64(address + fields["linetable"], self.bytes_object(linetable))
        self.image.put(address + fields["firstlineno"], struct.pack("<i", firstlineno))
        return address


def no_columns(units, line_delta):
    """One location-table entry without columns: ``units`` code units, a line delta."""
    return bytes([0x80 | (13 << 3) | (units - 1), line_delta << 1])


def build():
    image = Image()
    for start, size in ((RUNTIME, 0x1000), (INTERP, 0x4000), (TSTATE, 0x1000),
                        (FRAMES, 0x1000), (OBJECTS, 0x4000)):
        image.segments[start] = bytearray(size)
    image.put(RUNTIME, debug_offsets(0x030E06F0))
    image.u64(RUNTIME + MOVED["runtime_state"]["interpreters_head"], INTERP)
    image.u64(INTERP + MOVED["interpreter_state"]["threads_head"], TSTATE)
    thread = MOVED["thread_state"]
    image.u64(TSTATE + thread["interp"], INTERP)
    image.u64(TSTATE + thread["thread_id"], 0x7F00DEAD0000)
    image.u64(TSTATE + thread["native_thread_id"], 4242)

    objects = Objects(image)
    # Lines 10 (units 0-3) and 12 (units 4-7) of work(); 30 and 31 of <module>.
    work = objects.code("Job.work", "/app/job.py", 10, no_columns(4, 0) + no_columns(4, 2), 8)
    module = objects.code("<module>", "/app/main.py", 30, no_columns(2, 0) + no_columns(2, 1), 4)
    code_start = MOVED["code_object"]["co_code_adaptive"]

    frame = MOVED["interpreter_frame"]
    # innermost work() at unit 5, an older work() at unit 1, <module> at unit 3, then the
    # eval loop's entry shim (owner 3) that makes <module> an entry frame.
    records = [(work, 5, 0), (work, 1, 0), (module, 3, 0), (0, 0, 3)]
    addresses = [FRAMES + 0x100 * index for index in range(len(records))]
    image.u64(TSTATE + thread["current_frame"], addresses[0])
    for index, (code, unit, owner) in enumerate(records):
        address = addresses[index]
        older = addresses[index + 1] if index + 1 < len(addresses) else 0
        image.u64(address + frame["previous"], older)
        # 3.14's f_executable is a tagged _PyStackRef: a low bit set on purpose.
        image.u64(address + frame["executable"], code | 1 if code else 0)
        image.u64(address + frame["instr_ptr"], code + code_start + 2 * unit if code else 0)
        image.put(address + frame["owner"], bytes([owner]))
    return image.memory(), addresses


def test_frames_are_read_with_the_offsets_the_process_publishes():
    memory, addresses = build()
    lookup = {"_PyRuntime": RUNTIME}.get
    runtime = find_runtime(memory, lookup)
    assert str(runtime.version) == "3.14.6"
    [thread] = runtime.threads()
    assert (thread.native_thread_id, thread.thread_id) == (4242, 0x7F00DEAD0000)
    assert thread.stop_reason == ""
    assert [(f.function, f.filename, f.line, f.is_entry, f.address) for f in thread.frames] == [
        ("Job.work", "/app/job.py", 12, False, addresses[0]),
        ("Job.work", "/app/job.py", 10, False, addresses[1]),
        ("<module>", "/app/main.py", 31, True, addresses[2]),
    ]
    assert [f.name for f in thread.frames] == ["work", "work", "<module>"]
