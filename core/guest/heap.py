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
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["immortalize", "name_immortals", "take_free_chunks"]

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


_BATCH = 8192
"""Addresses sent at a time (`immortalize`)."""


def immortalize(send: Any, keep_mortal: tuple[Any, ...] = (), alive: list[Any] | None = None
                ) -> int:
    """Before a start image is taken: name every object the interpreter can reach, to be made
    immortal. `send` gets batches of 32-bit words: the address of `None` (an immortal object,
    whose reference count is the one to copy), then the addresses. Python code cannot change
    a reference count, so the host writes them: into the live guest's memory, or into the
    built image's data (see `runtime/_wasmtime/immortal.py`). Returns how many were sent.

    Every function call, attribute or global read adds to a reference count and takes it
    back, and each such write costs a page: a copy-on-write fault in a new guest, a page
    copied at each rollback point or renewal. An ordinary cell wrote some 230 pages, most of
    them for the counts of the image's modules, functions, code and strings alone; immortal
    objects' counts are never written. The objects are walked from the collector's list
    through what each refers to, each once (a bitmap of addresses), skipping those that are
    immortal already. `keep_mortal`: objects meant to be freed (a reserve of memory let go
    when a cell runs out). `alive`: where to hold every object named, when they must outlive
    this call (`name_immortals`)."""
    is_immortal = sys._is_immortal  # type: ignore[attr-defined]
    gc.collect()  # garbage made immortal would never go
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()  # frozen objects are not listed
    try:
        todo = gc.get_objects()
    finally:
        if frozen:
            gc.freeze()
    seen = bytearray()  # a bit per 8 bytes of memory (objects are 8-byte aligned)
    for obj in (send, keep_mortal, *keep_mortal):  # this call's own objects go with it
        _mark(seen, id(obj))
    header, sent = [id(None)], 0
    stack = [todo]  # depth first, a batch's referents at a time: the lists stay small
    batch: list[Any] = []
    while stack:
        for obj in stack.pop():
            if _mark(seen, id(obj)) or is_immortal(obj):
                continue
            batch.append(obj)
            if len(batch) >= _BATCH:
                sent += _sent(send, header, batch, stack, alive)
        if batch:
            sent += _sent(send, header, batch, stack, alive)
    return sent


_named: list[Any] = []
"""What `name_immortals` named, held for good (immortal, those objects are never freed)."""


def name_immortals(path: str, keep_mortal: tuple[Any, ...] = ()) -> int:
    """`immortalize` for an image the build writes: the addresses go into the file at
    `path`, and the build writes the counts (the default runtime's component). Call it right
    before `take_free_chunks`, which takes up the holes its own objects leave. Every object
    named is held (`_named`) until the image is taken: one freed in between would leave its
    address to another object or to a buffer (a set's table), whose word there the build
    would overwrite with the immortal count."""
    names: list[bytes] = []
    count = immortalize(names.append, (*keep_mortal, names, _named), _named)
    with open(path, "wb") as out:
        out.writelines(names)
    return count


def _mark(seen: bytearray, address: int) -> bool:
    """Mark `address` seen; whether it was already."""
    at, bit = address >> 6, 1 << ((address >> 3) & 7)
    if at >= len(seen):
        seen.extend(bytes(at + 1 - len(seen) + (1 << 16)))
    if seen[at] & bit:
        return True
    seen[at] |= bit
    return False


def _sent(send: Any, header: list[int], batch: list[Any], stack: list[list[Any]],
          alive: list[Any] | None) -> int:
    """Send `batch` to be made immortal, its referents put on `stack`; empties it."""
    from array import array

    send(array("I", header + list(map(id, batch))).tobytes())
    if alive is not None:
        alive.extend(batch)
    stack.append(gc.get_referents(*batch))
    count = len(batch)
    batch.clear()
    return count
