"""The one rule that turns whatever a tool returns into a JSON value for the guest.

- `None`, `bool`, `int`, `float` (NaN and infinities included) and `str` pass unchanged.
- Mappings become dicts; keys that are not strings are turned into strings the way
  `json.dumps` does (`True` -> `"true"`, `1` -> `"1"`), others with `str()`.
- Lists, tuples, sets, frozensets, deques and generators become lists; named tuples become dicts.
- Pydantic models become `model_dump(mode="json")`; dataclasses become dicts of their fields.
- `bytes` become text when they are valid UTF-8, else `{"type": "bytes", "base64": ...}`.
- `datetime`, `date` and `time` become ISO 8601 text; `timedelta` becomes seconds (float);
  `Decimal`, `UUID`, `Path` and `complex` become text; an `Enum` becomes its value.
- Objects with `tolist()` (NumPy arrays and scalars) use it.
- Anything else becomes its `repr()`; cycles and nesting deeper than 200 levels become a
  short marker string. Conversion never raises.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# This file also runs inside the sandbox, where every import costs start-up time and memory.
# So it imports no module just to test `isinstance`: if `datetime` was never imported, no
# object can be a datetime. `_loaded` looks such modules up only when they are there.

__all__ = ["to_json_value"]

_MAX_DEPTH = 200
_SCALARS = (str, int, float, bool, type(None))


def to_json_value(obj: Any) -> Any:
    """Convert `obj` to a JSON-compatible value by the rule in this module's docstring."""
    try:
        if _is_plain(obj, 0):
            return obj  # already JSON-shaped: no copy (the common case for big results)
    except RecursionError:
        pass
    return _convert(obj, 0, set())


def _is_plain(obj: Any, depth: int) -> bool:
    """True if `obj` is made only of dicts with str keys, lists and JSON scalars."""
    kind = type(obj)
    if kind in _SCALARS:
        return True
    if depth > _MAX_DEPTH:
        return False
    if kind is list:
        for item in obj:
            if type(item) not in _SCALARS and not _is_plain(item, depth + 1):
                return False
        return True
    if kind is dict:
        for key, item in obj.items():
            if type(key) is not str:
                return False
            if type(item) not in _SCALARS and not _is_plain(item, depth + 1):
                return False
        return True
    return False


def _loaded(module: str, name: str) -> Any:
    """`module.name` if the module is already imported, else a type nothing is an instance of."""
    found = sys.modules.get(module)
    return getattr(found, name, _Never) if found is not None else _Never


class _Never:
    pass


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, float) and (key != key or key in (float("inf"), float("-inf"))):
        return "NaN" if key != key else ("Infinity" if key > 0 else "-Infinity")
    if isinstance(key, _loaded("enum", "Enum")):
        return _key(key.value)
    return str(key)


def _convert(obj: Any, depth: int, seen: set[int]) -> Any:
    if type(obj) in _SCALARS:
        return obj
    if depth > _MAX_DEPTH:
        return "<nested too deep>"
    try:
        return _convert_object(obj, depth, seen)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ or model_dump must not reach the caller
        return f"<unconvertible {type(obj).__name__}: {exc!r}>"[:500]


def _convert_object(obj: Any, depth: int, seen: set[int]) -> Any:
    if isinstance(obj, _loaded("enum", "Enum")):
        return _convert(obj.value, depth + 1, seen)
    if isinstance(obj, (bool, int, float, str)):  # subclasses of the scalars
        return (bool if isinstance(obj, bool) else int if isinstance(obj, int) else
                float if isinstance(obj, float) else str)(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        raw = bytes(obj)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            import base64

            return {"type": "bytes", "base64": base64.b64encode(raw).decode("ascii")}
    if isinstance(obj, (_loaded("datetime", "datetime"), _loaded("datetime", "date"),
                        _loaded("datetime", "time"))):
        return obj.isoformat()
    if isinstance(obj, _loaded("datetime", "timedelta")):
        return obj.total_seconds()
    if isinstance(obj, (_loaded("decimal", "Decimal"), _loaded("uuid", "UUID"),
                        _loaded("pathlib", "PurePath"), complex)):
        return str(obj)
    if id(obj) in seen:
        return "<cycle>"
    seen.add(id(obj))
    try:
        return _convert_container(obj, depth, seen)
    finally:
        seen.discard(id(obj))


def _convert_container(obj: Any, depth: int, seen: set[int]) -> Any:
    nxt = depth + 1
    if isinstance(obj, Mapping):
        return {_key(k): _convert(v, nxt, seen) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_asdict"):
        return {k: _convert(v, nxt, seen) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple, set, frozenset, Iterator)) or type(obj).__name__ == "deque":
        items = list(obj)
        if isinstance(obj, (set, frozenset)):
            try:
                items.sort()
            except TypeError:
                pass
        return [_convert(v, nxt, seen) for v in items]
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        return _convert(dump(mode="json"), nxt, seen)
    fields = getattr(type(obj), "__dataclass_fields__", None)
    if isinstance(fields, dict):
        return {name: _convert(getattr(obj, name), nxt, seen) for name, f in fields.items()
                if getattr(f, "_field_type", None) is _loaded("dataclasses", "_FIELD")}
    tolist = getattr(obj, "tolist", None)
    if callable(tolist) and not isinstance(obj, type):
        return _convert(tolist(), nxt, seen)
    return repr(obj)
