"""Why a value does not fit its schema, in words a model can act on: the failure the
checker raises, how values and types are named in it, and which of several failures to tell.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Check = Callable[[Any], None]
    """Raises `Invalid`, with a path relative to the value it was given."""

__all__ = ["Invalid", "PLAIN", "PY_NAMES", "did_you_mean", "fails", "inside", "nearest", "same",
           "show", "wrong_type"]

PY_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
            "array": "list", "object": "dict", "null": "None"}
PLAIN = frozenset((str, int, float, bool, type(None), list, tuple, dict))


class Invalid(Exception):
    """One reason a value does not fit; `path` is where: the keys and indexes down to it."""

    def __init__(self, message: str, wanted: str | None = None):
        super().__init__(message)
        self.path: tuple[Any, ...] = ()
        self.message = message
        self.wanted = wanted
        """For a value of the wrong type: the types that would have done."""

    def at(self, step: Any) -> Invalid:
        self.path = (step, *self.path)
        return self


def did_you_mean(word: str, options: Any) -> str:
    """"; did you mean 'x'?" for the closest options, or "" when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(options), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def wrong_type(wanted: str, value: Any) -> Invalid:
    return Invalid(f"must be {wanted}, not {type_name(value)} ({show(value)})", wanted)


def same(a: Any, b: Any) -> bool:
    """JSON equality: `True` is not `1`, but `1` is `1.0`; tuples equal lists."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) in PLAIN and type(b) in PLAIN and a == b


def nearest(failures: list[Invalid], value: Any) -> Invalid:
    """Why a value fits none of the alternatives, said through the one it came closest to:
    the failure deepest inside the value, else the one branch whose type fitted."""
    deepest = max(len(f.path) for f in failures)
    if deepest:
        return next(f for f in failures if len(f.path) == deepest)
    fitted = [f for f in failures if f.wanted is None]
    if len(fitted) == 1:
        return fitted[0]
    if not fitted:
        wanted = " | ".join(dict.fromkeys(w for f in failures for w in str(f.wanted).split(" | ")))
        return wrong_type(wanted, value)
    return Invalid("fits none of the allowed shapes: " + "; ".join(
        dict.fromkeys(f.message for f in failures)))


def inside(check: Check, value: Any, step: Any) -> None:
    try:
        check(value)
    except Invalid as bad:
        raise bad.at(step) from None


def fails(check: Check | None, value: Any) -> Invalid | None:
    if check is None:
        return None
    try:
        check(value)
    except Invalid as bad:
        return bad
    return None
