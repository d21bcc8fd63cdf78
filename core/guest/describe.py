"""One-line descriptions of values, for names a silent cell defined.

`rows = fetch()` prints nothing; telling the model `rows = list of 5,000 items, the first a
dict` saves it a turn. Only exact built-in types are looked into (lengths, a few keys, reprs of
scalars), so no user-defined `__repr__` or `__len__` ever runs here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["describe"]

_SCALARS = (bool, int, float, complex)
_SEQUENCES = (list, tuple, set, frozenset)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def describe(value: Any) -> str:
    kind = type(value)
    if value is None or kind in _SCALARS:
        try:
            text = repr(value)
        except ValueError:  # an int too large to print
            return "a very large int"
        return text if len(text) <= 60 else text[:57] + "..."
    if kind in (str, bytes):
        more = f"... ({_plural(len(value), 'character')})" if len(value) > 50 else ""
        return repr(value[:50]) + more
    if kind is dict:
        keys = [k for _, k in zip(range(6), value) if type(k) is str]
        shown = ", ".join(repr(k) for k in keys) + (", ..." if len(value) > 6 else "")
        return f"dict of {_plural(len(value), 'key')}" + (f" ({shown})" if keys else "")
    if kind in _SEQUENCES:
        first = ""
        if kind in (list, tuple) and value:
            name = type(value[0]).__name__
            first = f", the first {'an' if name[:1] in 'aeiou' else 'a'} {name}"
        return f"{kind.__name__} of {_plural(len(value), 'item')}{first}"
    name = kind.__name__
    if name in ("function", "builtin_function_or_method", "module", "type"):
        label = {"type": "class", "builtin_function_or_method": "function"}.get(name, name)
        return f"<{label} {getattr(value, '__name__', '?')}>"
    return f"<{name} object>"
