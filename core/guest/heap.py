"""Before a start image is taken: the heap's free chunks taken up, so that guests started from
the image allocate from fresh memory at the top of the heap instead of from old holes.

Both runtimes' CPython allocates with wasi-libc's malloc (no pymalloc), which reuses the
free chunks that imports and the warm-up left scattered through the heap. In a guest mapped
from a start image, the first write to a page copies it (a fault of some 3-5 us), so a new
default guest's first cell copied some 270 pages, many of them to put a few bytes into an
old hole, and a cell's rollback point or renewal copied them back. Taken up here by bytes
objects kept for good (in pages that every guest shares and none writes), they leave the
guests' own allocations to the top of the heap, contiguous.
"""

from __future__ import annotations

import gc

__all__ = ["take_free_chunks"]

_LARGEST = 4096
"""Chunks are taken from this size down (a larger free chunk is taken in pieces of it)."""
_MOST = 64 << 20
"""A bound, should the allocator never answer from above the objects there are."""
_ROOM = 8 << 20
"""The most room left at the top in return (guests' memories start that much larger)."""
_taken: list[bytes] = []


def take_free_chunks() -> int:
    """Allocate bytes objects, from the largest size down, each size until malloc answers
    from above every object there is (the top of the heap, where the next size starts);
    returns the bytes taken. Call it once, right before the image is taken."""
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()  # frozen objects are not listed
    try:
        top = max(map(id, gc.get_objects()))
    finally:
        if frozen:
            gc.freeze()
    taken = 0
    for size in range(_LARGEST, 1, -4):
        while taken < _MOST:
            chunk = bytes(size)
            if id(chunk) > top:
                break  # from the top: freed again, it goes back to it
            _taken.append(chunk)
            taken += size
    # As much room at the top as the holes gave (the memory grows for it, untouched): a
    # guest fits in the memory it had before, and a pooled guest can still be given back.
    room = bytes(min(taken, _ROOM))
    del room
    return taken
