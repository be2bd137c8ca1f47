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
