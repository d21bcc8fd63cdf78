"""The code tool's own argument, however a framework hands it over, and the code a front end
runs before the model's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..guest import to_json_value

__all__ = ["CodeArgs", "code_of", "variables_code"]

_EXPECTED = 'expected arguments {"code": "<python source>"}'


class CodeArgs(BaseModel):
    """The code tool's arguments as a pydantic model, for frameworks that declare a tool's
    arguments that way (its JSON schema is `CODE_TOOL_SCHEMA`'s: one string, named for what
    it is)."""

    code: str


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


def variables_code(variables: Mapping[str, Any]) -> str:
    """Code that defines `variables` in the sandbox's globals, as JSON values (the rule tool
    results follow)."""
    data = json.dumps({str(k): to_json_value(v) for k, v in variables.items()})
    return f"globals().update(__import__('json').loads({data!r}))"
