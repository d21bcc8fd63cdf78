"""tooliscode: code mode for AI agents.

All of an agent's tools become typed Python functions inside one `run_python(code)` tool,
run by CPython compiled to WebAssembly in an isolated, stateful sandbox.
"""

from __future__ import annotations

from . import _moved
from ._version import __version__
from .engine import (
    CellResult,
    FileInfo,
    Limits,
    OnOutput,
    Session,
    SessionState,
    ToolCallRecord,
)
from .errors import (
    RuntimeIntegrityError,
    RuntimeNotFound,
    SessionClosed,
    SnapshotError,
    ToolError,
    ToolIsCodeError,
)
from .guest import to_json_value
from .mcp import MCPServer
from .openai import TextMode, TextTurn, ToolIsCode, ToolOutput, extract_code
from .tools import Tool, ToolRegistry, as_tool

__all__ = [
    "CellResult", "FileInfo", "Limits", "MCPServer", "OnOutput", "RuntimeIntegrityError",
    "RuntimeNotFound",
    "Session", "SessionClosed", "SessionState", "SnapshotError", "TextMode", "TextTurn", "Tool",
    "ToolCallRecord", "ToolError",
    "ToolIsCode", "ToolIsCodeError", "ToolOutput", "ToolRegistry",
    "__version__", "as_tool", "extract_code", "to_json_value",
]

_moved.install()
