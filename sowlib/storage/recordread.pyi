from sowlib.storage.format import Buf

HEAD_SIZE: int
OVERHEAD: int
MARKER: int
KIND_BYTE: int

def read_put(
    buf: Buf, off: int, limit: int, /
) -> tuple[int, float, float, bytes, int, bytes] | None: ...
def set_direct_digest(on: bool, /) -> bool: ...
def put_payloads(buf: Buf, offsets: list[int], limit: int, /) -> list[bytes] | None: ...
