"""MCP tools and results in tooliscode's terms, for any MCP client.

Nothing here imports `mcp`: listings and results are read by their field names (mcp >= 2
snake_case), so the same rules serve our own `MCPServer` and the frameworks' MCP clients.

- A tool becomes a `Tool` named `namespace.tool`, called in the sandbox as `namespace.tool(...)`.
- Structured content comes back as Python values. Servers built with the official SDK wrap a
  value that is not an object (a list, a number, a string) as `{"result": value}` and declare an
  output schema with that single property; such values are unwrapped.
- Text content comes back as `str`; other blocks (images, audio, resources) as dicts; several
  blocks as a list of those.
- A result flagged `is_error` raises `ToolError` with the server's text.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..errors import ToolError
from ..tools import Tool, python_name

__all__ = ["MCPCall", "mcp_namespace", "mcp_result_value", "mcp_tool"]

MCPCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""`call(tool_name, arguments)` -> an awaitable MCP `CallToolResult`."""


def mcp_namespace(name: str) -> str:
    """A server's reported name as the identifier its tools are grouped under in the sandbox.

    Names of standard modules and builtins get `_mcp` added: a namespace called `time` would
    be replaced by the module the moment the model's code runs `import time`.
    """
    ident = python_name(name.lower())
    if ident in sys.stdlib_module_names or hasattr(builtins, ident):
        ident += "_mcp"
    return ident


def _wrapped(schema: Mapping[str, Any] | None) -> bool:
    """Whether an output schema is the `{"result": value}` wrapper of a non-object value."""
    if not isinstance(schema, Mapping):
        return False
    if schema.get("x-fastmcp-wrap-result"):
        return True
    props = schema.get("properties")
    return isinstance(props, Mapping) and list(props) == ["result"] and \
        list(schema.get("required") or ()) == ["result"]


def _output_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The schema of what the sandbox receives (the inner one for wrapped values)."""
    if not isinstance(schema, Mapping):
        return None
    if not _wrapped(schema):
        return dict(schema)
    inner = dict(schema["properties"]["result"])
    inner.pop("title", None)
    if "$defs" in schema:
        inner["$defs"] = schema["$defs"]
    return inner


def _block(block: Any) -> Any:
    if getattr(block, "type", None) == "text":
        return block.text
    dump = getattr(block, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else block


def _text(content: Any) -> str:
    return "\n".join(str(_block(b)) for b in content or ())


def mcp_result_value(result: Any, output_schema: Mapping[str, Any] | None = None) -> Any:
    """The value a tool call returns in the sandbox, by the rules in this module's docstring.

    `output_schema` is the tool's declared (raw) output schema, used to unwrap `{"result": x}`.
    """
    if getattr(result, "is_error", False):
        raise ToolError(_text(result.content).strip() or "the MCP tool reported an error")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        if _wrapped(output_schema) and isinstance(structured, dict) and \
                list(structured) == ["result"]:
            return structured["result"]
        return structured
    blocks = [_block(b) for b in getattr(result, "content", None) or ()]
    if not blocks:
        return None
    return blocks[0] if len(blocks) == 1 else blocks


def mcp_tool(spec: Any, namespace: str, call: MCPCall, **options: Any) -> Tool:
    """A `Tool` for one listed MCP tool (`spec`: an MCP `Tool`); `call` reaches its server.

    `options` go to `Tool` (for example `timeout_s`); `metadata` records the server and the
    tool's MCP name and annotations.
    """
    raw_name: str = spec.name
    raw_output = getattr(spec, "output_schema", None)

    async def function(**arguments: Any) -> Any:
        return mcp_result_value(await call(raw_name, arguments), raw_output)

    annotations = getattr(spec, "annotations", None)
    metadata = {"mcp_server": namespace, "mcp_tool": raw_name, **options.pop("metadata", {})}
    if annotations is not None:
        metadata["mcp_annotations"] = annotations.model_dump(exclude_none=True)
    function.__name__ = python_name(raw_name)
    function.__qualname__ = f"{namespace}.{function.__name__}"
    return Tool(name=f"{namespace}.{raw_name}",
                description=spec.description or getattr(spec, "title", None) or "",
                parameters=dict(getattr(spec, "input_schema", None) or {}), function=function,
                output_schema=_output_schema(raw_output), namespace=namespace,
                python_name=python_name(raw_name), metadata=metadata, **options)
