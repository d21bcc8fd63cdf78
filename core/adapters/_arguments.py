"""The code tool's own argument, however a framework hands it over."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["code_of"]

_EXPECTED = 'expected arguments {"code": "<python source>"}'


def code_of(arguments: str | dict[str, Any] | None) -> str:
    """The source in the code tool's arguments (a JSON object, or its text); `ValueError`
    naming what is expected otherwise."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            raise ValueError(_EXPECTED) from None
    code = arguments.get("code") if isinstance(arguments, dict) else None
    if not isinstance(code, str):
        raise ValueError(_EXPECTED)
    return code
