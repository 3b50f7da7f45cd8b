"""The C digests (``digest.h``, through ``recordread.xxh3_64`` and ``recordread.xxh64``)
against the xxhash package, which computes them for the Python paths: the record
checksum (XXH3-64, seed 0) and the content key digest (XXH64) must agree on every input,
or the C and Python readers would disagree on which records are intact and which key a
value has.

Lengths are drawn up to 5,000 bytes and, by name, at every length where the algorithms
change their steps: the short-input branches (0, 1-3, 4-8, 9-16, 17-128, 129-240), the
16-byte rounds, the 32-byte XXH64 stripes, and the 64-byte stripes and 1,024-byte blocks
of long XXH3 inputs, each one byte either side.
"""

from __future__ import annotations

import os

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

if os.environ.get("CI"):
    from sowlib.storage import recordread
else:
    recordread = pytest.importorskip("sowlib.storage.recordread")

_BOUNDARIES = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 64, 65, 96, 97, 127, 128}
_BOUNDARIES |= {129, 130, 143, 144, 239, 240, 241, 242}
for _size in (32, 64, 1024):
    for _n in range(1, 5000 // _size + 1):
        _BOUNDARIES |= {_n * _size - 1, _n * _size, _n * _size + 1}
EDGE_LENGTHS = sorted(n for n in _BOUNDARIES if n <= 5001)


def _bytes_of(length: int, seed: int) -> bytes:
    """``length`` bytes that differ from one seed to the next (every byte value occurs)."""
    return bytes((i * 131 + seed * 7 + (i >> 8) * 17) & 0xFF for i in range(length))


@pytest.mark.parametrize("length", EDGE_LENGTHS)
def test_both_digests_agree_at_every_edge_length(length: int) -> None:
    for seed in (0, 1, 255):
        data = _bytes_of(length, seed)
        assert recordread.xxh3_64(data) == xxhash.xxh3_64_intdigest(data)
        assert recordread.xxh64(data, 0) == xxhash.xxh64_intdigest(data)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=5000))
def test_xxh3_64_agrees_with_the_package(data: bytes) -> None:
    assert recordread.xxh3_64(data) == xxhash.xxh3_64_intdigest(data)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=5000), seed=st.integers(min_value=0, max_value=2**64 - 1))
def test_xxh64_agrees_with_the_package_for_any_seed(data: bytes, seed: int) -> None:
    assert recordread.xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed=seed)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(min_size=1, max_size=600), start=st.integers(0, 599))
def test_a_digest_reads_only_the_bytes_it_is_given(data: bytes, start: int) -> None:
    """A slice of a larger buffer (a record inside the map) hashes as its own bytes."""
    view = memoryview(data)[min(start, len(data)) :]
    assert recordread.xxh3_64(view) == xxhash.xxh3_64_intdigest(bytes(view))
    assert recordread.xxh64(view, 0) == xxhash.xxh64_intdigest(bytes(view))


def test_a_digest_takes_bytes_like_objects_only() -> None:
    with pytest.raises(TypeError):
        recordread.xxh3_64("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        recordread.xxh64(b"", 0, 1)  # type: ignore[call-arg]
    with pytest.raises(OverflowError):
        recordread.xxh64(b"", -1)
