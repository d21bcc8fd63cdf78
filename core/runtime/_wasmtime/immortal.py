"""The host's side of `guest/heap.immortalize`: the guest names objects, and the host writes
an immortal reference count into each, straight into the guest's memory (Python code has no
way to make an object immortal itself).

Done once, right before a start image is taken, so that guests started from it never write
the counts of the objects they share: see the guest's docstring for why that matters.
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Callable

__all__ = ["Immortalizer", "IMMORTALIZE", "LEAST_IMMORTAL"]

LEAST_IMMORTAL = 1 << 30
"""CPython's least immortal reference count on a 32-bit platform (wasm32): the count copied
must be at least this, or it is not the immortal object's."""

IMMORTALIZE = ("import tooliscode_guest.heap as _h, tooliscode_guest.channel as _c, "
               "tooliscode_guest.main as _m\n"
               "_h.immortalize(_c.exchange, (_m._loop.reserve,))\n"
               "del _h, _c, _m\n")
"""The turn that has a booted guest name its objects (the reserve a cell that runs out of
memory lets go stays mortal)."""


class Immortalizer:
    """A host-call handler for the `IMMORTALIZE` turn: each request is the address of an
    immortal object, then the addresses to make immortal (32-bit words); each gets the
    first one's reference count. `memory()` gives the memory's (address, size) now."""

    def __init__(self, memory: Callable[[], tuple[int, int]]):
        self._memory = memory

    def __call__(self, frame: bytes) -> bytes:
        words = array("I")
        words.frombytes(bytes(frame))
        address, size = self._memory()
        memory = (ctypes.c_uint32 * (size // 4)).from_address(address)
        if not words or words[0] % 4 or words[0] >= size:
            raise ValueError("the guest named no immortal object to copy from")
        count = memory[words[0] >> 2]
        if count < LEAST_IMMORTAL:
            raise ValueError("the object the counts are copied from is not immortal")
        for at in words[1:]:
            if at % 4 or at >= size:
                raise ValueError(f"not an object's address: {at:#x}")
            memory[at >> 2] = count
        return b""
