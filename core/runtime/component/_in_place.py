"""Renewing a default guest in place: its memory written back to the moment after its setup.

Right after setup the guest names a random word and its address (`LOCATE`), so the host can
find its memory among its own mappings (`_memory.py`), grows that memory by a headroom it
leaves free (`GROW`), and keeps a mirror of it (`write_back.Mirror`). From then on the guard
notes every handle the guest makes or drops. After a run, the memory is written back from
the mirror if nothing of the run outlives that: no handle it made is still open, none the
memory names was dropped, the memory did not grow past the headroom, the guest did not trap.
Otherwise the instance starts its component again (`ComponentInstance.renew`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._wasmtime.write_back import Mirror
from ..base import GuestTrap
from . import _memory

if TYPE_CHECKING:
    from ._runtime import ComponentInstance

__all__ = ["Kept", "FIND", "LOCATE", "GROW", "RESEED", "locate"]

FIND = "_w = exchange(b'')\nexchange(str(id(_w)).encode())\ndel _w\n"
"""Where the guest's memory is: the address of the word the host answers it (`locate`). No
module of the guest's is used (a cell may have changed any): what a cell changed can only
make this turn fail or name a wrong address, where the word is not."""
LOCATE = "import os as _o\n_o.write(1, b''); _o.write(2, b'')\ndel _o\n" + FIND
"""`FIND` right after setup, the console's streams taken first, so that the memory kept
after this names them."""
HEADROOM = 16 << 20
"""Memory a renewable guest grows by before its baseline, left free: a run that needs no more
than that is written back (one that grows the memory past it gets a new instance)."""
GROW = f"import os as _o\n_o.read(0, {HEADROOM})\ndel _o\n"
"""Grow the memory by `HEADROOM`, no page touched: reading nothing from the console's input
into a buffer that big takes the memory, and the buffer, freed, leaves it to the allocator."""
_GROWN_MORE = 1 << 20
"""What the allocator may take past `HEADROOM` when it grows the memory for it."""
_ROOM_LEFT = 16 << 20
"""Memory the limit must still leave a guest past its headroom, or it gets none."""
RESEED = "import os as _o, random as _r\n_r.seed(_o.urandom(32))\ndel _o, _r\n"
"""A renewed guest's own random stream (its memory came back with the last run's): played
before its next turn's source, in the same turn."""


@dataclass
class Kept:
    """A guest's memory right after its setup, and what it held open then."""

    memory: _memory.Memory
    mirror: Mirror
    fds: frozenset[int]

    @classmethod
    def take(cls, guest: ComponentInstance, grow: bool = True) -> Kept | None:
        """Between turns, right after setup: None where the memory cannot be found. `grow`:
        take the headroom first, where the guest's memory limit leaves room for it."""
        memory = locate(guest, LOCATE)
        if grow and memory is not None \
                and memory.size + HEADROOM + _ROOM_LEFT <= guest.memory_bytes:
            try:
                _quiet_turn(guest, GROW)
            except GuestTrap:
                return None
            memory = _memory.grown(memory, HEADROOM, HEADROOM + _GROWN_MORE)
        if memory is None or memory.size > guest.memory_bytes:
            return None  # no memory can be larger than its limit: what was found is not it
        mirror = Mirror.capture(memory.address, memory.size, memory.image)
        if mirror is None:
            return None
        guest.guard.track()
        return cls(memory, mirror, frozenset(guest.opened))

    def write_back(self, guest: ComponentInstance) -> bool:
        """Between turns, after a run: the memory as it was, where nothing of the run
        outlives that (False, having changed nothing, where something does)."""
        guard, memory = guest.guard, self.memory
        if guest.trapped or guard.made or guard.dropped_old or guest.opened != self.fds:
            return False
        if _memory.readable(memory.address + memory.size) is not False \
                or not self.mirror.restore(memory.address, memory.size):
            return False
        guard.track()
        return True

    def close(self) -> None:
        self.mirror.close()


def locate(guest: ComponentInstance, source: str = FIND) -> _memory.Memory | None:
    """Between turns: the guest's memory, found by a turn of ours (`FIND`, or `LOCATE`); None
    where it cannot be. The word is the host's, new each time and given only to this guest,
    in a turn that reaches no tool: whatever a cell did to the guest, it can name no other
    guest's memory (which the host then writes to), only fail to name its own."""
    word = b"w" + os.urandom(15)  # not a NUL first: that begins a big answer's size
    try:
        asked = _quiet_turn(guest, source, first=word)
    except GuestTrap:
        return None
    if len(asked) != 2 or not asked[1].isdigit():
        return None
    return _memory.find(int(asked[1]), word)


def _quiet_turn(guest: ComponentInstance, source: str, first: bytes = b"") -> list[bytes]:
    """A turn of ours: what it asks the host is collected (the first request answered with
    `first`, the others with nothing, no tool reached), what it prints dropped."""
    asked: list[bytes] = []

    def answer(request: bytes) -> bytes:
        asked.append(request)
        return first if len(asked) == 1 else b""

    handler, output = guest.handler, guest.output
    guest.handler, guest.output = answer, None
    try:
        guest.turn(source)
    finally:
        guest.handler, guest.output = handler, output
    return asked
