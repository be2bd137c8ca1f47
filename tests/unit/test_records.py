"""records.record behaves as @dataclass did for the plugin's records."""

import pytest

from jit_unwind.model import MixedThread, NativeFrame, PyFrame, Region, RegionSource
from jit_unwind.records import field, record, replace
from jit_unwind.cpython.version import PyVersion


def test_defaults_factories_and_equality():
    frame = NativeFrame(3)
    assert (frame.level, frame.name, frame.guess, frame.stop_reason) == (3, None, False, "")
    assert frame == NativeFrame(3) and frame != NativeFrame(4)
    first, second = MixedThread(1, 10, None, None), MixedThread(2, 11, None, None)
    first.frames.append("x")
    assert second.frames == []  # each instance its own list
    with pytest.raises(TypeError):
        hash(frame)  # mutable records are unhashable, as dataclass's


def test_frozen_records_hash_and_refuse_assignment():
    region = Region(0x1000, 0x2000, RegionSource.MAPS, "a", sequence=1)
    same = Region(0x1000, 0x2000, RegionSource.MAPS, "a", sequence=2)  # not compared
    assert region == same and hash(region) == hash(same)
    assert len({region, same}) == 1
    with pytest.raises(AttributeError):
        region.start = 0


def test_replace_and_repr():
    frame = PyFrame(1, "f", "a.py", 3, True, "thread", 2, 4)
    moved = replace(frame, line=9)
    assert moved.line == 9 and moved.function == "f" and frame.line == 3
    assert repr(NativeFrame(1)).startswith("NativeFrame(level=1, kind=")


def test_order_and_hidden_fields():
    assert PyVersion(3, 12, 1) < PyVersion(3, 13, 0) <= PyVersion(3, 13, 0)

    @record(frozen=True)
    class Item:
        name: str
        extra: int = field(default=0, compare=False, repr=False)

    assert repr(Item("a", 5)).endswith(".Item(name='a')")
    assert Item("a", 1) == Item("a", 2)


def test_a_records_own_init_is_kept_and_takes_its_fields():
    """The records made at load, at a JIT process's stop or on the way of its first bt
    write their own __init__ (no compile, ~0.1-0.2 ms a class): it takes the fields in
    order with their defaults (None for a default factory's, which it calls), and the
    record still compares, hashes and prints as one."""
    import inspect

    from jit_unwind.arch.base import Architecture
    from jit_unwind.commands.registry import Command, Registered
    from jit_unwind.stack.frame_label import Label
    from jit_unwind.model import Mapping, NativeFrame, Unwound
    from jit_unwind.regions.jitdump_process import ProcessJitdump
    from jit_unwind.commands.settings import Setting
    from jit_unwind.unwind.context import UnwindContext
    from jit_unwind.unwind.runtime_entries import EntryFrame, SizedBase
    from jit_unwind.arch.x86_64_decoder import PrologueState, _Operand

    no_default = field().default  # the records' marker of a field without one
    for cls in (Label, ProcessJitdump, UnwindContext, EntryFrame, SizedBase, Mapping,
                Region, Unwound, NativeFrame, PrologueState, _Operand, Setting, Command,
                Registered, Architecture):
        assert cls.__init__.__code__.co_filename == inspect.getsourcefile(cls)
        fields = cls.__record_fields__
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [parameter.name for parameter in parameters] == list(fields), cls
        for parameter in parameters:
            made = fields[parameter.name]
            if made.default_factory is not None:
                assert parameter.default is None, (cls, parameter)
            elif made.default is not no_default:
                assert parameter.default == made.default, (cls, parameter)
            else:
                assert parameter.default is inspect.Parameter.empty, (cls, parameter)
    assert Label("f") == Label("f", "") != Label("f", "[guess]")
    assert repr(Label("f")) == "Label(name='f', marks='')"
    first, second = ProcessJitdump(), ProcessJitdump()
    first.loads.append("x")
    assert second.loads == [] and second == ProcessJitdump(None, [], 0, 0)
    base = SizedBase(word=0, shift=8, fixed=72)
    assert hash(base) == hash(SizedBase(0, 8, 72)) and base.fixed == 72
    with pytest.raises(AttributeError):
        base.fixed = 0


def test_an_init_is_compiled_at_the_records_first_instance():
    """A record that does not write its __init__ gets the compiled one when it is
    first made (most records are never made in a session), through a subclass too."""

    @record(frozen=True)
    class Pair:
        left: int
        right: int = field(default_factory=lambda: 7)

    class Derived(Pair):
        pass

    assert Pair.__init__.__code__.co_filename == records_file()
    first = Derived(1)
    assert Pair.__init__.__code__.co_filename == "<record " + Pair.__qualname__ + ">"
    assert Pair.__init__.__qualname__ == Pair.__qualname__ + ".__init__"
    assert (first.left, first.right) == (1, 7) and Pair(1) == Pair(1, 7) != Pair(2)
    assert Pair(right=3, left=1).right == 3
    with pytest.raises(TypeError):
        Pair()
    with pytest.raises(AttributeError):
        first.left = 5


def records_file() -> str:
    import inspect

    import jit_unwind.records
    return inspect.getsourcefile(jit_unwind.records)


def test_a_record_that_writes_its_init_is_compiled_no_other():
    @record
    class Point:
        x: int
        y: int = 0

        def __init__(self, x: int, y: int = 0):
            self.x = x
            self.y = y

    assert Point.__init__.__code__.co_filename == __file__
    assert Point(1) == Point(1, 0) != Point(1, 2)
    assert repr(Point(1)).endswith("Point(x=1, y=0)")
