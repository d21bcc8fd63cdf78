"""Big requests read where they lie in the guest's memory, instead of crossing as text.

A request crosses the `host-call` import as a WIT string of latin-1 text: binary bytes (a
checkpoint's pickle) are encoded to UTF-8 by the guest, copied by wasmtime and decoded again
here, about 190 ms for 34 MB, a quarter of that checkpoint's cost. The data runtime's host
reads a request in place; here, once a request is past `IN_MEMORY` bytes, the guest names
where its bytes lie (`AT`) and the host copies them out in one call.

The host must first know where the guest's memory is. It gives the guest a word of its own,
new each time (`WHERE`); the guest names the word's address (`THERE`), and the one memory of
this process holding that word there is this guest's (`_memory.find`, as a renewal finds
it). Only bytes inside that memory are read, by a copy that fails rather than faults; a
request that names anything else is answered `TEXT`, and the guest sends it as text after
all. Nothing a guest names can make the host read outside the guest's own memory. The memory
found stays where it is for the instance's life: wasmtime reserves the whole 4 GiB a 32-bit
memory may grow to, so growing never moves it (a renewal's write-back stands on the same).
"""

from __future__ import annotations

import os

from . import _memory

__all__ = ["IN_MEMORY", "AT", "WHERE", "THERE", "TEXT", "InMemory"]

IN_MEMORY = 1 << 18
"""Requests longer than this are read in place (the app module is given it): below it
the text's round trip costs less than finding the memory."""
AT = b"\x04"
"""A request `AT` + b"address:length": its bytes lie there in the guest's memory."""
WHERE = b"\x04"
"""The answer `WHERE` + word: say where this word lies first (`THERE`)."""
THERE = b"\x05"
"""A request `THERE` + b"word's object address:" + what followed `AT`."""
TEXT = b"\x06"
"""The answer that asks for the request as text. No answer the host encodes starts with
these bytes (marshal's type codes are printable), nor does a request (JSON, a NUL, an output
frame's 1)."""
_DIGITS = 12
"""The most digits an address or a length may have (a 32-bit memory needs 10)."""


class InMemory:
    """One instance's reads of big requests: its memory once found (a new instance has a
    new one: `ComponentInstance._start` makes a new `InMemory`)."""

    __slots__ = ("memory", "_word", "_found", "reads")

    def __init__(self) -> None:
        self.memory: _memory.Memory | None = None
        self._word: bytes | None = None
        self._found = True
        """False once finding the memory failed: no more tries on this instance."""
        self.reads = 0
        """Requests read in place (the tests count them)."""

    def request(self, frame: bytes) -> tuple[bytes | None, bytes | None]:
        """(the request, None), or (None, the control answer to give the guest), for a
        `frame` starting with `AT` or `THERE`."""
        if frame[:1] == THERE:
            word, self._word = self._word, None
            where, _, rest = frame[1:].partition(b":")
            address = _number(where)
            if word is None or address is None or not self._found:
                return None, TEXT
            self.memory = _memory.find(address, word)
            if self.memory is None:
                self._found = False
                return None, TEXT
            return self._read(rest, retry=False)
        return self._read(frame[1:], retry=True)

    def _read(self, at: bytes, retry: bool) -> tuple[bytes | None, bytes | None]:
        where, _, length = at.partition(b":")
        address, size = _number(where), _number(length)
        if address is None or size is None or not self._found:
            return None, TEXT
        memory = self.memory
        if memory is None or address + size > memory.size:  # not found yet, or it grew
            if not retry:
                return None, TEXT
            self._word = b"w" + os.urandom(15).replace(b"\0", b"w")
            return None, WHERE + self._word
        data = _memory.read(memory.address + address, size)
        if data is None:
            return None, TEXT
        self.reads += 1
        return data, None


def _number(text: bytes) -> int | None:
    return int(text) if 0 < len(text) <= _DIGITS and text.isdigit() else None
