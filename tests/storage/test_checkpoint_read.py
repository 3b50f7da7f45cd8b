"""The side file read part by part = ``decode_checkpoint`` of its whole bytes.

An open reads the checkpoint's header, then its blob into its own bytes, then the
checksum, instead of reading the whole file and copying the blob out of it; both must
accept and refuse the same files.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from sowlib.storage import checkpoint
from sowlib.storage.checkpoint import Checkpoint, decode_checkpoint, encode_checkpoint

CHECKPOINTS = st.builds(
    Checkpoint,
    st.integers(0, 2**32),
    st.integers(0, 2**40),
    st.integers(0, 2**20),
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.binary(max_size=300),
)


def _damaged(data: bytes, how: str, at: int, byte: int) -> bytes:
    if how == "cut":
        return data[: at % (len(data) + 1)]
    if how == "grow":
        return data + bytes([byte])
    if how == "flip" and data:
        i = at % len(data)
        return data[:i] + bytes([data[i] ^ (byte or 1)]) + data[i + 1 :]
    return data


@settings(max_examples=300, deadline=None)
@given(
    ckpt=CHECKPOINTS,
    how=st.sampled_from(["none", "cut", "grow", "flip"]),
    at=st.integers(0, 400),
    byte=st.integers(0, 255),
    junk=st.binary(max_size=100),
)
def test_reading_part_by_part_is_decoding_the_whole(
    ckpt: Checkpoint, how: str, at: int, byte: int, junk: bytes
) -> None:
    for data in (_damaged(encode_checkpoint(ckpt), how, at, byte), junk):
        expected = decode_checkpoint(data)
        got = checkpoint._read_side_file(io.BytesIO(data), len(data))
        assert got == expected
        if how == "none" and data is not junk:
            assert got == ckpt


def test_a_file_that_grew_after_its_size_was_taken_is_refused() -> None:
    data = encode_checkpoint(Checkpoint(1, 2, 3, 4, 5, b"blob"))
    assert checkpoint._read_side_file(io.BytesIO(data), len(data)) is not None
    assert checkpoint._read_side_file(io.BytesIO(data + b"x"), len(data)) is None
    assert checkpoint._read_side_file(io.BytesIO(data[:-1]), len(data)) is None
