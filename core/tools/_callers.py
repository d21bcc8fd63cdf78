"""Who may call each tool: the code only, the model directly only, or both.

As with Anthropic's and OpenAI's `allowed_callers`, a tool can stay a native tool beside the
code tool: one the model should call itself (a tool whose result it must see, or one that
ends the turn), and it is then left out of the code's functions. Every front end takes the
same option, `callers={"tool name": "direct" | "both" | "code"}`; tools it does not name are
"code", the default of code mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Literal, TypeVar

__all__ = ["CALLERS", "Caller", "check_callers", "split_callers"]

Caller = Literal["code", "direct", "both"]
CALLERS: tuple[Caller, ...] = ("code", "direct", "both")
T = TypeVar("T")


def check_callers(callers: Mapping[str, str] | None, names: Iterable[str]) -> dict[str, Caller]:
    """`callers` checked against the tools' `names`: a clear error for a value that is not a
    caller, or a name that is no tool's."""
    callers = dict(callers or {})
    known = set(names)
    for name, caller in callers.items():
        if caller not in CALLERS:
            raise ValueError(f"callers[{name!r}] must be one of {', '.join(CALLERS)}, "
                             f"not {caller!r}")
        if name not in known:
            raise ValueError(f"callers names {name!r}, which is not one of the tools "
                             f"({', '.join(sorted(known)) or 'none'})")
    return callers  # type: ignore[return-value]


def split_callers(tools: Iterable[T], callers: Mapping[str, str] | None,
                  name: Callable[[T], str]) -> tuple[list[T], list[T]]:
    """The tools the code may call and the ones the model calls directly (a "both" tool is in
    each list), in their order."""
    items = list(tools)
    chosen = check_callers(callers, (name(t) for t in items))
    in_code = [t for t in items if chosen.get(name(t), "code") in ("code", "both")]
    direct = [t for t in items if chosen.get(name(t), "code") in ("direct", "both")]
    return in_code, direct
