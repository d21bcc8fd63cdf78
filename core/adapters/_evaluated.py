"""A function whose signature a framework reads, with its annotations evaluated."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["evaluated"]


def evaluated(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its annotations evaluated: LlamaIndex and CrewAI build a tool's schema from
    the signature as written, and a module with postponed annotations writes strings."""
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, TypeError, ValueError):
        return fn

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **kwargs)
    else:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    call.__signature__ = signature  # type: ignore[attr-defined]
    return call
