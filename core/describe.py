"""Short descriptions of the names a silent cell defined, so the model sees what it made.

A cell like `rows = fetch()` prints nothing; telling the model `rows = list of 5,000 dicts`
saves it a turn. The descriptions come from a tiny follow-up cell that only looks at exact
built-in types (lengths, a few keys, reprs of scalars), so no user `__repr__` ever runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .result import CellResult
from .session import Session

__all__ = ["adescribe_names", "describe_names"]

_HELPER = '''\
def __tic_describe(v):
    t = type(v)
    if v is None or t in (bool, int, float, complex):
        try:
            s = repr(v)
        except ValueError:
            return "a very large int"
        return s if len(s) <= 60 else s[:57] + "..."
    if t in (str, bytes):
        return repr(v[:50]) + (f"... ({len(v):,} characters)" if len(v) > 50 else "")
    if t is dict:
        keys = [k for _, k in zip(range(6), v)]
        shown = ", ".join(repr(k) for k in keys if type(k) is str)
        more = ", ..." if len(v) > 6 else ""
        return f"dict of {len(v):,} key{'s' * (len(v) != 1)}" + (f" ({shown}{more})" if shown else "")
    if t in (list, tuple, set, frozenset):
        first = next(iter(v), None) if len(v) else None
        kind = type(first).__name__
        article = "an" if kind[:1] in "aeiou" else "a"
        inner = f", the first {article} {kind}" if first is not None and t in (list, tuple) else ""
        return f"{t.__name__} of {len(v):,} item{'s' * (len(v) != 1)}{inner}"
    if t.__name__ in ("function", "builtin_function_or_method", "module", "type"):
        kind = "class" if t.__name__ == "type" else t.__name__.replace("builtin_function_or_method", "function")
        return f"<{kind} {getattr(v, '__name__', '?')}>"
    return f"<{t.__name__} object>"
print(__import__("json").dumps({__n: __tic_describe(globals()[__n])
                                for __n in %s if __n in globals()}))
del __tic_describe
'''


def _wanted(result: CellResult, limit: int) -> list[str]:
    if not result.ok or result.restarted or result.stdout or result.value is not None \
            or result.has_final:
        return []
    return list(result.new_names[:limit])


def _code(names: Sequence[str]) -> str:
    return _HELPER % json.dumps(list(names))


def _parse(result: CellResult) -> dict[str, str]:
    try:
        found = json.loads(result.stdout) if result.ok else None
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def describe_names(session: Session, result: CellResult, limit: int = 30) -> dict[str, str]:
    """Descriptions of the names `result`'s cell defined when it showed nothing, else `{}`."""
    names = _wanted(result, limit)
    return _parse(session.run(_code(names))) if names else {}


async def adescribe_names(session: Session, result: CellResult,
                          limit: int = 30) -> dict[str, str]:
    names = _wanted(result, limit)
    return _parse(await session.arun(_code(names))) if names else {}
