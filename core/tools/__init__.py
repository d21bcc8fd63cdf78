"""Tools, framework-free: the `Tool`, the registry, JSON Schema handling, search, and the
typed Python stubs the model reads."""

from ._callers import CALLERS, Caller, check_callers, split_callers
from ._registry import ToolRegistry
from ._schema import describe_validation_error, function_schema, parse_docstring, return_schema
from ._stubs import ToolStub, guest_spec, search_entry, stub
from ._summary import SUMMARY_CHARS, Shared, clip, own_summaries, own_text, shared_texts, summary
from ._tool import Tool, ToolFunction, as_tool, python_name

__all__ = ["CALLERS", "SUMMARY_CHARS", "Caller", "Shared", "Tool", "ToolFunction",
           "ToolRegistry", "ToolStub", "as_tool", "check_callers", "clip",
           "describe_validation_error", "function_schema", "guest_spec", "own_summaries",
           "own_text", "parse_docstring", "python_name", "return_schema", "search_entry",
           "shared_texts", "split_callers", "stub", "summary"]
