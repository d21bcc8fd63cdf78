"""LEB128, the variable-length integers of the WebAssembly binary format: the one place
both runtimes' binary readers and writers (the interposer, the image's counts, the stack
guard) take them from."""

from __future__ import annotations

__all__ = ["uleb", "read_uleb", "read_sleb"]


def uleb(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def read_uleb(b: bytes, i: int) -> tuple[int, int]:
    """The unsigned number at `b[i]`, and where it ends."""
    value, i, _last = _read(b, i)
    return value, i


def read_sleb(b: bytes, i: int) -> tuple[int, int]:
    """The signed number at `b[i]` (an `i32.const`'s), and where it ends."""
    value, end, last = _read(b, i)
    if last & 0x40:
        value -= 1 << (7 * (end - i))
    return value, end


def _read(b: bytes, i: int) -> tuple[int, int, int]:
    value = shift = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i, byte
