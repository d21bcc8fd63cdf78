"""Tools, framework-free: the `Tool`, the registry, JSON Schema handling, search, and the
typed Python stubs the model reads."""

from ._registry import ToolRegistry
from ._schema import describe_validation_error, function_schema, parse_docstring
from ._stubs import ToolStub, guest_spec, search_entry, stub
from ._summary import clip, openings, summary
from ._tool import Tool, ToolFunction, as_tool, python_name

__all__ = ["Tool", "ToolFunction", "ToolRegistry", "ToolStub", "as_tool", "clip",
           "describe_validation_error", "function_schema", "guest_spec", "openings",
           "parse_docstring", "python_name", "search_entry", "stub", "summary"]
