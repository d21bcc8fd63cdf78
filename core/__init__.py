"""tooliscode: code mode for AI agents.

All of an agent's tools become typed Python functions inside one `run_python(code)` tool,
run by CPython compiled to WebAssembly in an isolated, stateful sandbox.
"""

from __future__ import annotations

from .convert import to_json_value
from .errors import (
    RuntimeIntegrityError,
    RuntimeNotFound,
    SessionClosed,
    ToolError,
    ToolIsCodeError,
)
from .files import FileInfo
from .limits import Limits
from .mcp import MCPServer
from .registry import ToolRegistry
from .result import CellResult, ToolCallRecord
from .session import Session
from .textmode import TextMode, TextTurn, extract_code
from .tools import Tool, as_tool
from .toolset import ToolIsCode, ToolOutput

__all__ = [
    "CellResult", "FileInfo", "Limits", "MCPServer", "RuntimeIntegrityError", "RuntimeNotFound",
    "Session", "SessionClosed", "TextMode", "TextTurn", "Tool", "ToolCallRecord", "ToolError",
    "ToolIsCode", "ToolIsCodeError", "ToolOutput", "ToolRegistry",
    "as_tool", "extract_code", "to_json_value",
]
__version__ = "0.1.0"
