"""MCP: servers as sources of sandbox tools, MCP tool conversion, the servers file, and the
code-mode proxy (`tooliscode mcp`)."""

from ._client import MCPServer
from ._config import ConfigError, UpstreamConfig, load_config, parse_config
from ._proxy import SEARCH_TOOL_NAME, CodeModeProxy, ProxyReply, UpstreamError
from ._tools import mcp_namespace, mcp_result_value, mcp_tool

__all__ = ["SEARCH_TOOL_NAME", "CodeModeProxy", "ConfigError", "MCPServer", "ProxyReply",
           "UpstreamConfig", "UpstreamError", "load_config", "mcp_namespace", "mcp_result_value",
           "mcp_tool", "parse_config"]
