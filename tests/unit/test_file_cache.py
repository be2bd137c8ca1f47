"""One way to key a per-file cache: by path, checked against the file's identity."""

import os

from jit_unwind.file_cache import FileCache


def test_a_file_is_read_once_until_it_changes(tmp_path):
    path = tmp_path / "map"
    path.write_text("one")
    reads = []

    def compute(name):
        reads.append(name)
        return open(name).read()

    cache = FileCache()
    assert cache.get(str(path), compute, None) == "one"
    assert cache.get(str(path), compute, None) == "one"
    assert len(reads) == 1
    path.write_text("two, longer")  # a perf map that grew
    assert cache.get(str(path), compute, None) == "two, longer"
    assert cache.peek(str(path)) == "two, longer"
    assert len(reads) == 2


def test_a_file_replaced_at_the_same_path_is_read_again(tmp_path):
    path, other = tmp_path / "lib.so", tmp_path / "other.so"
    path.write_text("aaaa")
    other.write_text("bbbb")
    stat = path.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime
    cache = FileCache()
    assert cache.get(str(path), lambda name: open(name).read(), None) == "aaaa"
    os.replace(other, path)  # another inode
    assert cache.get(str(path), lambda name: open(name).read(), None) == "bbbb"


def test_a_missing_or_unreadable_file_gives_the_failed_value(tmp_path):
    cache = FileCache()
    assert cache.get(str(tmp_path / "gone"), lambda name: 1 / 0, "failed") == "failed"
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\0")
    calls = []

    def broken(name):
        calls.append(name)
        raise ValueError("not ELF")

    assert cache.get(str(garbage), broken, []) == []
    assert cache.get(str(garbage), broken, []) == []
    assert len(calls) == 1  # kept until the file changes
    assert cache.peek(str(tmp_path / "gone")) is None


def test_the_cache_is_bounded(tmp_path):
    cache = FileCache(limit=3)
    for index in range(10):
        path = tmp_path / f"f{index}"
        path.write_text(str(index))
        assert cache.get(str(path), lambda name: open(name).read(), None) == str(index)
    assert len(cache._entries) <= 3
