"""A client's Chat Completions request, checked, with what decides how it is served."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..tools import Tool, ToolRegistry, guest_spec
from ._recorder import stand_in
from ._shapes import ApiError

__all__ = ["ChatRequest", "parse_request"]

_OURS = ("tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options", "n")
"""Fields answered here rather than by the upstream when the request has tools."""


def _bad(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


@dataclass
class ChatRequest:
    body: dict[str, Any]
    """The request as the client sent it (with the default model filled in)."""
    registry: ToolRegistry | None = None
    """The function tools of the request (as stand-ins that only record calls), or None."""
    choice: Literal["auto", "none", "required"] = "auto"
    """From `tool_choice`; a named function is "required" with `only` set."""
    only: str | None = None
    parallel: bool = True

    @property
    def model(self) -> str:
        return str(self.body["model"])

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def include_usage(self) -> bool:
        options = self.body.get("stream_options")
        return isinstance(options, Mapping) and bool(options.get("include_usage"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body["messages"]

    def offered(self) -> ToolRegistry:
        """The tools the model may call now (one, when `tool_choice` names it)."""
        assert self.registry is not None
        if self.only is None:
            return self.registry
        return ToolRegistry([t for t in self.registry if t.name == self.only])

    def upstream_fields(self) -> dict[str, Any]:
        """The client's other settings (temperature, max_tokens, ...) for the upstream."""
        return {k: v for k, v in self.body.items() if k not in _OURS and k != "messages"}


def _tools(raw: Any) -> ToolRegistry:
    if not isinstance(raw, list):
        raise _bad("tools must be a list", "tools")
    tools: list[Tool] = []
    for i, spec in enumerate(raw):
        if not isinstance(spec, Mapping) or spec.get("type") != "function" \
                or not isinstance(spec.get("function"), Mapping):
            raise _bad(f"tools[{i}]: only function tools are supported: "
                       '{"type": "function", "function": {"name": ..., "parameters": ...}}',
                       f"tools[{i}]")
        parameters = spec["function"].get("parameters")
        if parameters is not None and not isinstance(parameters, Mapping):
            raise _bad(f"tools[{i}]: parameters must be a JSON Schema object",
                       f"tools[{i}].function.parameters")
        try:
            tool = Tool.from_openai(spec, function=stand_in)
            guest_spec(tool)  # the schema is read here: a broken one fails now, not later
        except Exception as exc:  # noqa: BLE001 - a schema is untrusted: anything may fail
            raise _bad(f"tools[{i}]: {type(exc).__name__}: {exc}", f"tools[{i}]") from None
        tools.append(tool)
    try:
        return ToolRegistry(tools)
    except ValueError as exc:
        raise _bad(str(exc), "tools") from None


def _choice(request: ChatRequest, raw: Any) -> None:
    if raw is None or raw in ("auto", "none", "required"):
        request.choice = raw or "auto"
        return
    function = raw.get("function") if isinstance(raw, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(name, str):
        raise _bad('tool_choice must be "auto", "none", "required" or {"type": "function", '
                   '"function": {"name": ...}}', "tool_choice")
    assert request.registry is not None
    if name not in request.registry:
        raise _bad(f"tool_choice names {name!r}, which is not among the tools", "tool_choice")
    request.choice, request.only = "required", name


def parse_request(body: Any, default_model: str | None) -> ChatRequest:
    """Check what the server relies on; the rest is the upstream's to judge."""
    if not isinstance(body, dict):
        raise _bad("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _bad(f"messages[{i}] must be an object with a role", f"messages[{i}]")
    if not body.get("model"):
        if not default_model:
            raise _bad("model is required (or start the server with --model)", "model")
        body = {**body, "model": default_model}
    request = ChatRequest(body)
    if not body.get("tools"):
        return request
    if body.get("n") not in (None, 1):
        raise _bad("n > 1 is not supported with tools", "n")
    request.registry = _tools(body["tools"])
    _choice(request, body.get("tool_choice"))
    request.parallel = body.get("parallel_tool_calls") is not False
    return request
