"""A rollback point of pickled variables: a whole checkpoint, and the deltas chained onto it.

Where the guest pickles its variables (the default runtime), the first cell's point is all of
them. After that, a cell that could change only the variables it names brings, with its
result, what it changed (see the guest's `points` and `reach`); `Checkpoint.extend` chains
that on, and a rollback loads the chain part after part (`state`). Anything the guest says
that does not follow this point is refused, and a whole checkpoint is taken instead.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from ..guest import persist

__all__ = ["Checkpoint"]

_CHAIN, _CHAIN_MOST = 64, 4096
_CHAIN_BYTES = 64 * 1024
"""A chain of deltas ends in a whole checkpoint once they add up to more than this or than
the whole state they follow, or after `_CHAIN` of them, one more for each 2 KB of the whole
(a big state's whole checkpoint costs that much more), `_CHAIN_MOST` at most: a rollback
loads every part, and the guest's account of what a cell can change is renewed."""


@dataclass
class Checkpoint:
    """The variables after a cell, as the guest pickled them: all of them (`data`), then
    what each later cell changed (`deltas`), where the guest could tell what a cell could
    change (see the guest's `reach`). Deltas are added in place, by the worker's guest
    thread alone (`Points`); a stopped cell's session reads the point once that thread has
    let the worker go."""

    data: bytes
    dropped: dict[str, str] = field(default_factory=dict)
    """Names that could not be pickled, with the reason."""
    line: int | None = None
    """The guest's mark for `data`, which its deltas name; None: no delta follows it."""
    deltas: list[bytes | tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    """Each cell's since `data`: pickled bytes, or plain values as the guest's result gave
    them in JSON (with the names the cell deleted), pickled only if a rollback loads them."""
    chained: int = 0
    """The deltas' size in bytes (about, for plain ones): kept, not summed per cell."""

    @property
    def state(self) -> bytes:
        """What the guest's `persist.load` reads: `data`, or the chain of it and the deltas."""
        if not self.deltas:
            return self.data
        return persist.chain([bytes(self.data), *(
            d if isinstance(d, bytes) else persist.plain(*d) for d in self.deltas)])

    @property
    def size_bytes(self) -> int:
        return len(self.data) + self.chained

    def extend(self, told: dict[str, Any], limit: int | None) -> bool:
        """Add the delta a cell's result `told` brought (`{"on", "n"[, "set", "removed"]
        [, "delta", "touched", "dropped"]}`). False when it does not follow this point, or
        the chain would grow past what a whole checkpoint costs: one is taken instead. It
        runs after every cell: the usual delta (a few plain values) takes the short way."""
        n, deltas = told.get("n"), self.deltas
        if self.line is None or told.get("on") != self.line or type(n) is not int:
            return False
        if len(told) == 2:  # nothing changed
            return n == len(deltas)
        if n != len(deltas) + 1 \
                or len(deltas) >= min(_CHAIN_MOST, max(_CHAIN, len(self.data) // 2048)):
            return False
        values = told.get("set")
        if values is not None:
            removed = told.get("removed", [])
            delta: Any = (values, removed)
            size = _plain_size(values, removed)
        else:
            delta = _unpacked(told.get("delta"))
            size = len(delta) if delta is not None else None
        if size is None:
            return False
        grown = self.chained + size
        if grown > max(_CHAIN_BYTES, len(self.data)) or \
                (limit is not None and len(self.data) + grown > limit):
            return False
        if self.dropped or "dropped" in told:
            self.dropped = _still_dropped(self.dropped, told)
        deltas.append(delta)
        self.chained = grown
        return True


def _plain_size(values: Any, removed: Any) -> int | None:
    """About what plain values pickle to; None when they are not what a guest sends (names
    to numbers, strings, True, False, None)."""
    if type(values) is not dict or type(removed) is not list:
        return None
    size = 16
    for name, value in values.items():
        kind = type(value)
        if type(name) is not str or kind not in _PLAIN:
            return None
        size += len(name) + (len(value) if kind is str else 9) + 4
    for name in removed:
        if type(name) is not str:
            return None
        size += len(name) + 4
    return size


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _unpacked(delta: Any) -> bytes | None:
    """A pickled delta, as the guest's result gave it (base64)."""
    if type(delta) is not str:
        return None
    try:
        return base64.b64decode(delta, validate=True)
    except (binascii.Error, ValueError):
        return None


def _still_dropped(dropped: dict[str, str], told: dict[str, Any]) -> dict[str, str]:
    """The names left out of the point after a delta: a name set again is no longer
    missing, and the delta may leave out names of its own."""
    gone: set[Any] = set()
    for key in ("touched", "removed"):
        if isinstance(told.get(key), list):
            gone.update(told[key])
    if isinstance(told.get("set"), dict):
        gone.update(told["set"])
    said = told.get("dropped")
    return {**{k: v for k, v in dropped.items() if k not in gone},
            **({str(k): str(v) for k, v in said.items()} if isinstance(said, dict) else {})}
