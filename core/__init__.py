"""tooliscode: code mode for AI agents.

All of an agent's tools become typed Python functions inside one `run_python(code)` tool,
run by CPython compiled to WebAssembly in an isolated, stateful sandbox.
"""

from __future__ import annotations

from . import _moved
from .engine.folder import FileInfo
from .engine.limits import Limits
from .engine.result import CellResult, ToolCallRecord
from .engine.session import Session
from .errors import (
    RuntimeIntegrityError,
    RuntimeNotFound,
    SessionClosed,
    ToolError,
    ToolIsCodeError,
)
from .guest.convert import to_json_value
from .mcp.client import MCPServer
from .openai.textmode import TextMode, TextTurn, extract_code
from .openai.toolset import ToolIsCode, ToolOutput
from .tools.registry import ToolRegistry
from .tools.tool import Tool, as_tool

__all__ = [
    "CellResult", "FileInfo", "Limits", "MCPServer", "RuntimeIntegrityError", "RuntimeNotFound",
    "Session", "SessionClosed", "TextMode", "TextTurn", "Tool", "ToolCallRecord", "ToolError",
    "ToolIsCode", "ToolIsCodeError", "ToolOutput", "ToolRegistry",
    "as_tool", "extract_code", "to_json_value",
]
__version__ = "0.1.0"

_moved.install()
