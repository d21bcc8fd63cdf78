"""Linear memory as a delta against the image an interpreter started from.

Between two turns a reactor interpreter is its linear memory (its only mutable global, the
stack pointer, is back at its start value). Most of that memory is still what the starting
image held, so a snapshot keeps only the 64 KiB pages that differ, plus the size.
"""

from __future__ import annotations

import struct

__all__ = ["PAGE", "apply", "diff", "size_of"]

PAGE = 64 * 1024
_HEAD = struct.Struct("<QI")
_INDEX = struct.Struct("<I")


def diff(base: memoryview | bytes, current: memoryview | bytes) -> bytes:
    """The pages of `current` that differ from `base` (pages past `base`'s end all count)."""
    cur, old = memoryview(current), memoryview(base)
    pages = []
    for start in range(0, len(cur), PAGE):
        page = cur[start:start + PAGE]
        if start + len(page) > len(old) or page != old[start:start + len(page)]:
            pages.append((start // PAGE, page))
    out = [_HEAD.pack(len(cur), len(pages))]
    for index, page in pages:
        out += [_INDEX.pack(index), bytes(page)]
    return b"".join(out)


def apply(delta: bytes, target: memoryview) -> None:
    """Write the pages of `delta` into `target`, which holds the base image and is already
    as large as the memory the delta was taken from."""
    size, count = _HEAD.unpack_from(delta, 0)
    if len(target) < size:
        raise ValueError(f"the memory is {len(target):,} bytes; the snapshot needs {size:,}")
    at = _HEAD.size
    for _ in range(count):
        (index,) = _INDEX.unpack_from(delta, at)
        at += _INDEX.size
        start = index * PAGE
        length = min(PAGE, size - start)
        if length <= 0 or at + length > len(delta):
            raise ValueError("the memory delta is damaged")
        target[start:start + length] = delta[at:at + length]
        at += length


def size_of(delta: bytes) -> int:
    """The memory size the delta was taken from."""
    return _HEAD.unpack_from(delta, 0)[0]
