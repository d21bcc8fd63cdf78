"""Tools, framework-free: the `Tool`, the registry, JSON Schema handling, search, and the
typed Python stubs the model reads."""

from ._callers import CALLERS, Caller, check_callers, split_callers
from ._registry import ToolRegistry
from ._schema import describe_validation_error, function_schema, parse_docstring, return_schema
from ._stubs import ToolStub, guest_spec, search_entry, stub
from ._summary import clip, openings, summary
from ._tool import Tool, ToolFunction, as_tool, python_name

__all__ = ["CALLERS", "Caller", "Tool", "ToolFunction", "ToolRegistry", "ToolStub", "as_tool", "clip",
           "describe_validation_error", "function_schema", "guest_spec", "openings",
           "parse_docstring", "python_name", "return_schema", "search_entry", "split_callers",
           "stub", "summary", "check_callers"]
