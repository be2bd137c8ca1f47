"""The native + Python merge on made-up stacks (the e2e tests run it on real ones)."""

from jit_unwind.model import EVAL, JIT, OTHER, NativeFrame, PyFrame
from jit_unwind.stack.merge import merge


def py(name, address, entry=False, code=0):
    return PyFrame(address, name, "app.py", 1, entry, "thread", code, 0)


def names(frames):
    return [f.function for f in frames]


def test_eval_frames_take_their_groups_by_pointer():
    frames = [py("leaf", 0x100), py("mid", 0x200, entry=True), py("top", 0x300),
              py("<module>", 0x400, entry=True)]
    natives = [NativeFrame(0, OTHER), NativeFrame(1, EVAL, 0x100),
               NativeFrame(2, OTHER), NativeFrame(3, EVAL, 0x300)]
    result = merge(natives, frames)
    assert names(result.by_level[1]) == ["leaf", "mid"]
    assert names(result.by_level[3]) == ["top", "<module>"]
    assert result.matched_by_pointer == 2 and not result.unclaimed


def test_counting_when_no_pointer_is_readable():
    frames = [py("a", 1, entry=True), py("b", 2), py("c", 3, entry=True)]
    result = merge([NativeFrame(0, EVAL), NativeFrame(1, EVAL)], frames)
    assert names(result.by_level[0]) == ["a"] and names(result.by_level[1]) == ["b", "c"]
    assert result.matched_by_count == 2


def test_frames_newer_than_the_eval_pointer_belong_to_the_jit_frame():
    frames = [py("leaf", 0x100), py("hot", 0x200), py("top", 0x300),
              py("<module>", 0x400, entry=True)]
    natives = [NativeFrame(0, JIT), NativeFrame(1, JIT),
               NativeFrame(2, EVAL, 0x300)]
    result = merge(natives, frames)
    assert names(result.by_level[0]) == ["leaf", "hot"]
    assert names(result.by_level[2]) == ["top", "<module>"]


def test_without_pointer_jit_frames_take_frames_up_to_their_code_object():
    frames = [py("leaf", 0x100, code=0xA), py("hot", 0x200, code=0xB),
              py("top", 0x300, code=0xC), py("<module>", 0x400, entry=True, code=0xD)]
    natives = [NativeFrame(0, JIT, code_object=0xB), NativeFrame(1, JIT, code_object=0xB),
               NativeFrame(2, EVAL)]
    result = merge(natives, frames)
    assert names(result.by_level[0]) == ["leaf", "hot"]
    assert names(result.by_level[2]) == ["top", "<module>"]


def test_an_eval_pointer_newer_than_the_trace_frame_is_the_traces_own():
    """3.15: the debugger unwinds the trace by CPython's CFI, which leaves the eval
    loop's callee-saved registers as the trace had them; its ``frame`` can then be a
    frame the trace pushed (leaf): the trace still runs the frames up to hot."""
    frames = [py("leaf", 0x100, code=0xA), py("hot", 0x200, code=0xB),
              py("<module>", 0x300, entry=True, code=0xC)]
    natives = [NativeFrame(0, OTHER), NativeFrame(1, JIT, code_object=0xB),
               NativeFrame(2, EVAL, 0x100)]
    result = merge(natives, frames)
    assert names(result.by_level[1]) == ["leaf", "hot"]
    assert names(result.by_level[2]) == ["<module>"]
    assert result.matched_by_pointer == 1 and not result.unclaimed


def test_jit_code_running_the_entry_frame_leaves_its_eval_loop_nothing():
    """JIT -> C -> Python -> JIT: key's trace runs key, the entry frame of the eval loop
    that map() started; nested's trace and its eval loop come after."""
    frames = [py("key", 0x100, entry=True, code=0xA), py("nested", 0x200, code=0xB),
              py("<module>", 0x300, entry=True, code=0xC)]
    natives = [NativeFrame(0, JIT, code_object=0xA), NativeFrame(1, JIT, code_object=0xA),
               NativeFrame(2, EVAL), NativeFrame(3, OTHER),
               NativeFrame(4, JIT, code_object=0xB), NativeFrame(5, JIT, code_object=0xB),
               NativeFrame(6, EVAL)]
    result = merge(natives, frames)
    assert names(result.by_level[0]) == ["key"]
    assert 2 not in result.by_level or result.by_level[2] == []
    assert names(result.by_level[4]) == ["nested"]
    assert names(result.by_level[6]) == ["<module>"]
    assert not result.unclaimed


def test_frames_no_eval_frame_claims_are_reported():
    frames = [py("a", 1, entry=True), py("b", 2, entry=True)]
    result = merge([NativeFrame(0, EVAL)], frames)
    assert names(result.unclaimed) == ["b"]


def test_interleave_streams_and_holds_jit_frames_back_until_their_eval_loop():
    """The frame filter's stream: an item is yielded once its Python frames are known;
    what nobody claimed goes under the last item; mix() gives the same pairs."""
    from jit_unwind.stack.mixed import interleave, mix

    frames = [py("leaf", 0x100), py("hot", 0x200), py("top", 0x300, entry=True),
              py("<module>", 0x400, entry=True)]
    natives = [NativeFrame(0, OTHER), NativeFrame(1, JIT), NativeFrame(2, EVAL, 0x300),
               NativeFrame(3, OTHER)]
    seen = []

    def items():
        for native in natives:
            seen.append(native.level)
            yield native

    stream = interleave(items(), lambda native, _index: native, frames)
    first = next(stream)
    # Frame 0 waits for frame 1, the JIT frame for the eval loop below it.
    assert first[0].level == 0 and first[1] == [] and seen == [0, 1, 2]
    second = next(stream)
    assert second[0].level == 1 and names(second[1]) == ["leaf", "hot"] and seen == [0, 1, 2]
    rest = list(stream)
    assert [(n.level, names(p)) for n, p in rest] == [(2, ["top"]), (3, ["<module>"])]

    class Thread:  # what mix() reads of a PyThread
        pass

    thread = Thread()
    thread.frames = frames
    assert [(m.native.level, names(m.python)) for m in mix(natives, thread)] == [
        (0, []), (1, ["leaf", "hot"]), (2, ["top"]), (3, ["<module>"])]
