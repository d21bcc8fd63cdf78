"""What a session's rollback point needs after a cell, where the host keeps pickled
checkpoints (the default runtime): nothing new, what the cell changed, or a whole checkpoint.

After a whole checkpoint (`persist.dump`, marked at random: its "line"), a cell that could
change only the variables it names (`reach`) gives the host just their new values (`delta`),
in its result: as they are when plain, else pickled alone. The host chains them onto the
checkpoint (`engine/_points.py`). A cell that names nothing changed nothing; a state of
numbers and strings that still holds the very objects the checkpoint took is "the same"
(`unchanged_since`). Any other cell is followed by a whole checkpoint.
"""

from __future__ import annotations

import binascii
import operator
import sys
import types

from . import persist

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .reach import Reach

__all__ = ["DELTA_BYTES", "delta", "unchanged_since"]

DELTA_BYTES = 64 * 1024
"""The most a delta pickles to; past it the whole state is pickled once more instead."""
_INT64 = 1 << 63
_PLAIN_CHARS = 4096


def delta(ns: dict[str, Any], own: set[Any], helpers: dict[str, Any], reached: Reach,
          line: list[int]) -> dict[str, Any] | None:
    """What changed in `ns` (whose cell variables are `own`) since the host's point (`line`:
    its mark, and the deltas it took since, counted here), after a cell that could change
    only the variables it names (`reached`): their values, as they are when plain
    (`_plain`) or pickled alone, and the names it deleted. None when they pickle to more
    than a small delta should, or no variables are left (a whole checkpoint, or none,
    follows)."""
    if not own:
        return None  # said apart ("empty")
    touched = [name for name in reached.names if name in own and name[:2] != "__"]
    removed = [name for name in reached.own if name not in own]
    if not touched and not removed:
        return {"on": line[0], "n": line[1]}  # the host's point holds this state
    values = {name: ns[name] for name in touched}
    if _plain(values):  # as they are, in the result's JSON: the host pickles them if ever
        line[1] += 1
        told = {"on": line[0], "n": line[1], "set": values}
        if removed:
            told["removed"] = removed
        return told
    try:
        data, dropped = persist.dump(ns, touched, helpers, DELTA_BYTES, removed)
    except (persist.TooBig, MemoryError):
        return None
    line[1] += 1
    told = {"on": line[0], "n": line[1], "touched": touched + removed,
            "delta": binascii.b2a_base64(data, newline=False).decode("ascii")}
    if dropped:
        told["dropped"] = dropped
    return told


def _plain(values: dict[str, Any]) -> bool:
    """Values JSON carries exactly and cheaply: numbers (ints of 64 bits), strings (4 KB in
    all), True, False, None."""
    chars = 0
    for value in values.values():
        kind = type(value)
        if kind is str:
            chars += len(value)
        elif kind is int:
            if not -_INT64 <= value < _INT64:
                return False
        elif kind is not float and kind is not bool and value is not None:
            return False
    return chars <= _PLAIN_CHARS


_FIXED = (int, float, complex, str, bytes, bool, type(None), types.ModuleType)
_FIXED_TYPES = frozenset(_FIXED)
_HELD_BYTES = 1 << 20
"""The most `unchanged_since` holds on to (past it, a dropped string would stay in memory
until the next checkpoint): a bigger state is pickled after each cell that ends."""


def unchanged_since(ns: dict[str, Any], names: list[str], last: Any) -> tuple[Any, bool]:
    """(what to compare the next time, whether `names` hold what they held at `last`): the
    same objects, each one that cannot change in place (numbers, strings, modules, tuples of
    those). A checkpoint of such a namespace need not be taken again. The objects are held,
    not their ids: a freed object's id is soon another's (`x = None; x = int(s)` gets the
    old int's), so only a small state is held. (In C where it can be: it runs after every
    cell.)"""
    values = list(map(ns.__getitem__, names))
    if not (set(map(type, values)) <= _FIXED_TYPES or all(map(_fixed, values))) \
            or sum(map(sys.getsizeof, values)) > _HELD_BYTES:
        return None, False
    same = last is not None and last[0] == names and all(map(operator.is_, values, last[1]))
    return (names, values), same


def _fixed(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _FIXED):
        return depth == 0 or sys.getsizeof(value) <= _HELD_BYTES // 16  # held, in a tuple
    if type(value) is tuple and depth < 3 and len(value) <= 100:
        return all(_fixed(v, depth + 1) for v in value)
    return False
