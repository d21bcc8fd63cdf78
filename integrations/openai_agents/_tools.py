"""The tools behind an Agents SDK code tool: function tools and MCP tools, as the SDK runs them.

Each becomes a tooliscode `Tool` declaration (what the sandbox shows and calls), a `run`
coroutine that calls the real tool with a `ToolContext`, and the SDK's `FunctionTool` for it
(the tool itself, the SDK's conversion of an MCP tool, or a stand-in for a plain function):
the one approval policies, guardrails and hooks are given, as for a direct call.
`openai_agents.CodeModeToolset` wraps every call in its span, approval and guardrails.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agents import (
    FunctionTool,
    RunContextWrapper,
    ToolTimeoutError,
    default_tool_error_function,
)
from agents.function_schema import function_schema
from agents.mcp import MCPServer as AgentsMCPServer
from agents.mcp import MCPUtil
from agents.tool import (
    ToolOutputText,
    invoke_function_tool,
    resolve_function_tool_failure_error_function,
    set_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext
from tooliscode import MCPServer, Tool, ToolError, as_tool
from tooliscode.mcp import mcp_namespace, mcp_tool
from tooliscode.tools import python_name

__all__ = ["Inner", "as_inner", "as_tool_error", "function_tool", "maybe", "mcp_inners",
           "plain"]


@dataclass
class Inner:
    """A tool the code can call: what the sandbox sees, and how the SDK runs it."""

    tool: Tool
    run: Callable[[ToolContext[Any], dict[str, Any]], Awaitable[Any]]
    sdk: FunctionTool
    """The tool as the SDK knows it: its name, approval policy and guardrails, and what
    hooks are given."""
    timeout_error: Callable[..., Any] | None = None
    mcp_server: str | None = None

    @property
    def sdk_name(self) -> str:
        return self.sdk.name

    @property
    def guarded(self) -> bool:
        return bool(self.sdk.tool_input_guardrails or self.sdk.tool_output_guardrails)


def as_inner(obj: Any) -> Inner:
    """A `FunctionTool`, a tooliscode `Tool` or a callable as a tool the code can call."""
    if isinstance(obj, FunctionTool):
        return _function_tool(obj)
    if not isinstance(obj, Tool) and not callable(obj):
        raise TypeError(f"code can call function tools only, not {type(obj).__name__}; give "
                        "hosted tools to the Agent itself")
    tool = as_tool(obj)
    return Inner(tool, _run_tool(tool), function_tool(tool))


def _function_tool(ft: FunctionTool) -> Inner:
    runnable = _raising(ft)
    qualified = ft.qualified_name
    namespace = qualified[: -len(ft.name) - 1] if qualified.endswith("." + ft.name) else None
    declared = Tool(name=qualified, description=ft.description,
                    parameters=_parameters(ft), output_schema=ft.output_json_schema,
                    namespace=python_name(namespace) if namespace else None,
                    python_name=python_name(ft.name))

    direct = ft.timeout_seconds is None and not _wants_run_context(ft.on_invoke_tool)

    async def run(ctx: ToolContext[Any], arguments: dict[str, Any]) -> Any:
        if direct:  # what invoke_function_tool does here, minus its per-call introspection
            return await runnable.on_invoke_tool(ctx, ctx.tool_arguments)
        return await invoke_function_tool(function_tool=runnable, context=ctx,
                                          arguments=ctx.tool_arguments)

    return Inner(declared, run, ft, ft.timeout_error_function)


def _parameters(ft: FunctionTool) -> dict[str, Any]:
    """What a call from code must give, as the SDK decides it. A strict schema lists every
    parameter as required (a model then always sends them all), but the SDK takes a call
    without the ones its function gives defaults, and fills them in: the code may leave out
    what the SDK's own plain schema of the function does not require (with the default it
    fills in, which a strict schema drops when it is None)."""
    strict = ft.params_json_schema
    if not ft.strict_json_schema:
        return strict
    try:
        plain = function_schema(ft.__wrapped__, strict_json_schema=False).params_json_schema
    except Exception:  # noqa: BLE001 - a hand-built tool: its strict schema's own defaults
        plain = {"required": [k for k, v in strict.get("properties", {}).items()
                              if "default" not in v]}
    needed = set(plain.get("required", ()))
    given = plain.get("properties", {})
    properties = {k: {**v, "default": given[k]["default"]}
                  if k not in needed and "default" not in v and "default" in given.get(k, {})
                  else v for k, v in strict.get("properties", {}).items()}
    return {**strict, "properties": properties,
            "required": [k for k in strict.get("required", ()) if k in needed]}


def _raising(ft: FunctionTool) -> FunctionTool:
    """A copy of `ft` whose failures and timeouts raise instead of turning into text: code
    must see a failed call as an exception, not as a string it might take for data. A failure
    formatter of the user's still writes the message."""
    formatter = resolve_function_tool_failure_error_function(ft)
    if formatter is default_tool_error_function:
        formatter = None

    async def fail(ctx: RunContextWrapper[Any], error: Exception) -> str:
        if formatter is None:
            raise error
        raise ToolError(str(await maybe(formatter(ctx, error))))

    # The SDK's own way to give a copied tool another failure policy (the copy's invoker
    # resolves the policy against the copy).
    copy = dataclasses.replace(ft, timeout_behavior="raise_exception")
    return set_function_tool_failure_error_function(copy, fail)


def _wants_run_context(on_invoke: Any) -> bool:
    """Whether a hand-built tool declares a plain `RunContextWrapper` context, which
    `invoke_function_tool` narrows the `ToolContext` to (it works that out on every call)."""
    try:
        params = list(inspect.signature(on_invoke).parameters.values())
    except (TypeError, ValueError):
        return True
    declared = str(params[0].annotation) if params else ""
    return "RunContextWrapper" in declared and "ToolContext" not in declared


def _run_tool(tool: Tool) -> Callable[[ToolContext[Any], dict[str, Any]], Awaitable[Any]]:
    async def run(ctx: ToolContext[Any], arguments: dict[str, Any]) -> Any:
        if tool.is_async:
            return await tool.ainvoke(arguments)
        return await asyncio.to_thread(tool.invoke, arguments)  # keep the runner's loop free

    return run


def function_tool(tool: Tool, name: str | None = None) -> FunctionTool:
    """A tooliscode `Tool` as an SDK `FunctionTool` that runs it: for the model to call
    directly, and what hooks are given for its calls from code."""
    run = _run_tool(tool)

    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        return plain(await run(ctx, json.loads(arguments or "{}")))

    return FunctionTool(name=name or tool.python_name, description=tool.description,
                        params_json_schema=dict(tool.parameters), on_invoke_tool=invoke,
                        strict_json_schema=False)


async def _agents_mcp(server: AgentsMCPServer, ctx: RunContextWrapper[Any],
                      agent: Any) -> list[Inner]:
    """An SDK MCP server's tools (its filter and approval policy applied); calls go straight to
    `call_tool`, so structured content reaches the code as values, not as JSON text."""
    namespace = _namespace(server)
    found = []
    for spec in await server.list_tools(ctx, agent):
        tool = mcp_tool(spec, namespace, server.call_tool)
        sdk = MCPUtil.to_function_tool(spec, server, False, agent=agent)  # policy, guardrails
        found.append(Inner(tool, _run_tool(tool), sdk, mcp_server=server.name))
    return found


def _our_mcp(server: MCPServer) -> list[Inner]:
    return [Inner(t, _run_tool(t), function_tool(t, t.metadata.get("mcp_tool", t.name)),
                  mcp_server=server.namespace) for t in server.tools()]


def _namespace(server: AgentsMCPServer) -> str:
    """The server's name, or, when the SDK made the name up, the name the server reports."""
    name = server.name
    if not name.startswith(("stdio: ", "sse: ", "streamable_http: ")):
        return python_name(name)
    session = getattr(server, "session", None)  # the connected MCP client session
    reported = getattr(getattr(session, "server_info", None), "name", None)
    command = name.split(": ", 1)[1].split(" ")[0]
    return mcp_namespace(reported or os.path.basename(command) or "mcp")


async def mcp_inners(server: Any, ctx: RunContextWrapper[Any], agent: Any) -> list[Inner]:
    """The tools of an SDK MCP server or of a started `tooliscode.MCPServer`."""
    if isinstance(server, AgentsMCPServer):
        return await _agents_mcp(server, ctx, agent)
    return _our_mcp(server)


async def as_tool_error(exc: Exception, tool: Inner, ctx: ToolContext[Any]) -> Exception:
    """A timeout as the tool's timeout message; anything else as it is."""
    if not isinstance(exc, ToolTimeoutError):
        return exc
    write = tool.timeout_error
    return ToolError(str(await maybe(write(ctx, exc))) if write is not None else str(exc))


def plain(value: Any) -> Any:
    """A text output object as its text; anything else as it is."""
    if isinstance(value, ToolOutputText):
        return value.text
    if isinstance(value, dict) and value.get("type") == "text" and set(value) <= {"type", "text"}:
        return value.get("text", "")
    return value


async def maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
