"""One-line descriptions of values, for names a silent cell defined.

`rows = fetch()` prints nothing; telling the model `rows = list of 5,000 items, the first a
dict of 3 keys ('id', 'name', 'total')` saves it a turn. Only exact built-in types are looked
into (lengths, a few keys, reprs of scalars), so no user-defined `__repr__` or `__len__` ever
runs here. Data objects are described as data, by what a model would ask next: a pandas
DataFrame's rows, columns and first column names, a Series' length and dtype, a numpy array's
shape and dtype. They are recognised by their class's name and module, never by importing
pandas or numpy (an import the cell did not make would cost seconds).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["describe"]

_SCALARS = (bool, int, float, complex)
_SEQUENCES = (list, tuple, set, frozenset)
_KEYS = 6


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _keys(value: dict) -> str:
    keys = [k for _, k in zip(range(_KEYS), value) if type(k) is str]
    shown = ", ".join(repr(k) for k in keys) + (", ..." if len(value) > _KEYS else "")
    return f"dict of {_plural(len(value), 'key')}" + (f" ({shown})" if keys else "")


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
        return _keys(value)
    if kind in _SEQUENCES:
        first = ""
        if kind in (list, tuple) and value:
            item = value[0]
            name = type(item).__name__
            first = f", the first {'an' if name[:1] in 'aeiou' else 'a'} " + (
                _keys(item) if type(item) is dict else name)
        return f"{kind.__name__} of {_plural(len(value), 'item')}{first}"
    name = kind.__name__
    if name in ("function", "builtin_function_or_method", "module", "type"):
        label = {"type": "class", "builtin_function_or_method": "function"}.get(name, name)
        return f"<{label} {getattr(value, '__name__', '?')}>"
    module = str(getattr(kind, "__module__", "")).partition(".")[0]  # pandas 3 says "pandas"
    if module in ("pandas", "numpy"):
        try:
            data = _data(value, name, module)
        except Exception:  # noqa: BLE001 - a broken or look-alike object: name it only
            data = None
        if data is not None:
            return data
    return f"<{name} object>"


def _data(value: Any, name: str, module: str) -> str | None:
    """A pandas or numpy object described by its shape: what `df.head()` would be run for."""
    if module == "pandas" and name == "DataFrame":
        rows, cols = value.shape
        labels = [_label(c) for c in value.columns[:_KEYS]]
        more = ", ..." if cols > _KEYS else ""
        return (f"DataFrame of {_plural(rows, 'row')} x {_plural(cols, 'column')}"
                + (f" ({', '.join(labels)}{more})" if labels else ""))
    if module == "pandas" and name == "Series":
        named = f" {_label(value.name)}" if value.name is not None else ""
        return f"Series{named} of {_plural(len(value), 'item')}, dtype {value.dtype}"
    if module == "numpy" and name == "ndarray":
        return f"ndarray of shape {tuple(int(n) for n in value.shape)}, dtype {value.dtype}"
    if module == "numpy" and getattr(value, "shape", None) == ():  # a numpy scalar
        text = repr(value.item())
        return f"{text if len(text) <= 60 else text[:57] + '...'} ({name})"
    return None


def _label(label: Any) -> str:
    """A column label: short reprs of plain ones, the type of the rest."""
    if type(label) in (str, int, float, bool):
        text = repr(label)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"<{type(label).__name__}>"
