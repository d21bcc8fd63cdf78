"""What the model reads: the code tool's guide, the tool catalog, how results read back,
and token counting."""

from .codetool import CODE_TOOL_NAME, CODE_TOOL_SCHEMA, code_tool_description, instructions

__all__ = ["CODE_TOOL_NAME", "CODE_TOOL_SCHEMA", "code_tool_description", "instructions"]
