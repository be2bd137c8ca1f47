"""A compressed DWARF section read in parts (``coreread/sections.py``'s ``_Inflating``):
inflated from its start only as far as the parts asked for, the bytes those of the whole
section inflated at once."""

import io
import os
import zlib

from jit_unwind.coreread.sections import _CHDR, _Inflating

SH_OFFSET = 100  # where the section starts in the file


def compressed_file(data: bytes):
    body = _CHDR.pack(1, 0, len(data), 1) + zlib.compress(data)
    header = {"sh_offset": SH_OFFSET, "sh_size": len(body)}
    return io.BytesIO(b"\xee" * SH_OFFSET + body + b"\xee" * 50), header


def test_only_the_part_asked_for_is_inflated_and_it_is_the_sections_bytes():
    data = os.urandom(300_000) + bytes(200_000) + os.urandom(100_000)
    handle, header = compressed_file(data)
    inflating = _Inflating(handle, header, len(data))
    inflating.through(1000)
    assert 1000 <= inflating.filled < len(data) // 2
    assert inflating.buffer[:1000] == data[:1000]
    inflating.through(450_000)
    assert inflating.buffer[440_000:450_000] == data[440_000:450_000]
    assert not inflating.whole
    inflating.through(10 ** 9)  # past the end: the whole section, no more
    assert inflating.whole and inflating.filled == len(data)
    assert inflating.buffer[:] == data


def test_a_stream_cut_short_reads_as_zeros_past_its_end():
    data = os.urandom(200_000)
    handle, header = compressed_file(data)
    header = dict(header, sh_size=_CHDR.size + 5000)  # 5,000 compressed bytes of it
    inflating = _Inflating(handle, header, len(data))
    inflating.through(len(data))  # ends without raising or looping
    assert not inflating.whole
    assert inflating.buffer[:inflating.filled] == data[:inflating.filled]
    assert inflating.buffer[len(data) - 10:] == bytes(10)


def test_the_start_an_earlier_run_kept_is_read_back_and_the_rest_inflated():
    data = os.urandom(400_000)
    handle, header = compressed_file(data)
    kept = io.BytesIO(data[:100_000])
    inflating = _Inflating(handle, header, len(data), (kept, 100_000))
    inflating.through(60_000)
    assert inflating.filled == 60_000 and inflating._inflated == 0  # nothing inflated
    assert inflating.buffer[:60_000] == data[:60_000]
    inflating.through(300_000)  # past the copy: inflated from the section's start
    assert inflating.buffer[:300_000] == data[:300_000]


def test_a_kept_start_shorter_than_it_said_is_inflated_instead():
    data = os.urandom(200_000)
    handle, header = compressed_file(data)
    kept = io.BytesIO(data[:10_000])  # cut after its length was taken
    inflating = _Inflating(handle, header, len(data), (kept, 150_000))
    inflating.through(120_000)
    assert inflating.buffer[:120_000] == data[:120_000]
