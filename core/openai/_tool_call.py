"""The wire shapes of a tool call and its answer, for the Responses and Chat Completions APIs.

A call arrives as a dict or as an openai SDK object; either way it becomes a `CodeCall`, and
the answer goes back in the matching shape. Nothing here raises on what a model produced: a
bad call becomes a `CodeCall` whose `problem` says what to fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Api", "CodeCall", "field", "parse_call", "to_plain"]

Api = Literal["responses", "chat"]

_FENCE = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)


def field(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` for mappings, `obj.key` for SDK objects."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def to_plain(obj: Any) -> Any:
    """An SDK object as the JSON-ready dict the SDK itself would send; other values as they are."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, Mapping):
        return dump(mode="json", by_alias=True, exclude_unset=True)
    return obj


@dataclass(frozen=True)
class CodeCall:
    """One call of the code tool, as the model sent it."""

    api: Api
    call_id: str
    name: str
    code: str | None
    problem: str | None = None
    """Why the call cannot run (bad JSON, wrong tool, no code); sent back to the model."""
    custom: bool = False
    """A Responses custom tool call (raw text input) rather than a function call."""
    arguments: dict[str, Any] | None = None
    """A call of a tool the model calls directly (`callers`): its arguments."""

    def output(self, text: str) -> dict[str, Any]:
        """The item that answers this call, in the API's own shape."""
        if self.api == "chat":
            return {"role": "tool", "tool_call_id": self.call_id, "content": text}
        kind = "custom_tool_call_output" if self.custom else "function_call_output"
        return {"type": kind, "call_id": self.call_id, "output": text}


def _strip_fence(code: str) -> str:
    match = _FENCE.match(code)
    return match.group(1) if match else code


def _code_from(arguments: Any, tool_name: str) -> tuple[str | None, str | None]:
    """(code, problem) from the call's arguments: a JSON string, or an already decoded dict."""
    example = f'Call {tool_name} with a JSON object like {{"code": "print(1)"}}.'
    if isinstance(arguments, (str, bytes)):
        if not str(arguments).strip():
            return None, f"The call had no arguments. {example}"
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            return None, f"The arguments were not valid JSON ({exc}). {example}"
    if not isinstance(arguments, Mapping):
        return None, f"The arguments must be a JSON object. {example}"
    code = arguments.get("code")
    if not isinstance(code, str):
        got = ", ".join(sorted(map(str, arguments))) or "nothing"
        return None, f'The arguments need a "code" string (got: {got}). {example}'
    if not code.strip():
        return None, f"The code was empty. {example}"
    return _strip_fence(code), None


def parse_call(item: Any, tool_name: str, inner_names: frozenset[str] = frozenset(),
               direct_names: frozenset[str] = frozenset()) -> CodeCall:
    """Read a Responses `function_call` / `custom_tool_call` item or a Chat Completions tool call.

    A call of one of `direct_names` (tools the model calls itself) comes back with its
    `arguments` and no code. Raises `TypeError` only when `item` is not a tool call at all (a
    programming error); anything the model got wrong comes back as `CodeCall.problem`.
    """
    function = field(item, "function")
    kind = field(item, "type")
    if function is not None:
        api: Api = "chat"
        call_id, name, arguments = field(item, "id"), field(function, "name"), \
            field(function, "arguments")
    elif kind in ("function_call", "custom_tool_call") or field(item, "call_id") is not None:
        api = "responses"
        call_id, name = field(item, "call_id"), field(item, "name")
        arguments = field(item, "input") if kind == "custom_tool_call" else field(item, "arguments")
    else:
        raise TypeError("expected a Responses function_call item or a Chat Completions tool "
                        f"call, got {type(item).__name__}: {str(item)[:200]}")
    custom = kind == "custom_tool_call"
    call_id = str(call_id or "")
    if name in direct_names and not custom:
        return _direct_call(api, call_id, name, arguments)
    if name != tool_name:
        hint = (f" {name} is a Python function inside {tool_name}: call it from code there."
                if isinstance(name, str) and name in inner_names else "")
        return CodeCall(api, call_id, str(name), None,
                        f"There is no tool {name!r} here; the only tool is {tool_name}.{hint}",
                        custom)
    if custom:
        text = arguments if isinstance(arguments, str) else ""
        return CodeCall(api, call_id, tool_name, _strip_fence(text) if text.strip() else None,
                        None if text.strip() else "The code was empty.", True)
    code, problem = _code_from(arguments, tool_name)
    return CodeCall(api, call_id, tool_name, code, problem)


def _direct_call(api: Api, call_id: str, name: str, arguments: Any) -> CodeCall:
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json.loads(arguments) if str(arguments).strip() else {}
        except ValueError as exc:
            return CodeCall(api, call_id, name, None, f"The arguments of {name} were not valid "
                            f"JSON ({exc}); send a JSON object.")
    if not isinstance(arguments, Mapping):
        return CodeCall(api, call_id, name, None, f"The arguments of {name} must be a JSON "
                        "object.")
    return CodeCall(api, call_id, name, None, arguments=dict(arguments))
