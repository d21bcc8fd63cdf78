"""The one tool the model sees: its name, schema, instructions, and how results read back.

Every integration (ToolIsCode, the framework adapters, the MCP proxy) builds its code tool
from these pieces, so the model reads the same thing everywhere.
"""

from __future__ import annotations

from .catalog import catalog
from .registry import ToolRegistry
from .result import CellResult

__all__ = ["CODE_TOOL_NAME", "CODE_TOOL_SCHEMA", "code_tool_description", "instructions", "render"]

CODE_TOOL_NAME = "run_python"

CODE_TOOL_SCHEMA: dict = {
    "type": "object",
    "properties": {
        "code": {"type": "string",
                 "description": "Python source to run in the persistent session."},
    },
    "required": ["code"],
    "additionalProperties": False,
}

_GUIDE = """\
`{name}` runs Python 3.12 in a sandboxed session that persists for the whole conversation:
variables, functions and imports stay defined between calls. The tools below are Python
functions already defined there; call them directly, for example `rows = some_tool(arg=1)`.
Do the work in code: loop, filter, join and aggregate tool results there, and print only what
you need, since a tool's result reaches you only through what you print or the value of the
last expression. Independent calls run concurrently with
`await asyncio.gather(tool_a(...), tool_b(...))`. A failed call raises `ToolError`.
`search_tools("words")` finds tools by name and description, `help(tool)` shows one in full,
and `final_answer(value)` ends the run with that value as the answer. The working directory
/session is readable and writable and keeps its files; there is no network access."""


def code_tool_description(registry: ToolRegistry, name: str = CODE_TOOL_NAME) -> str:
    """The tool description: short, since the instructions carry the catalog."""
    count = len(registry)
    return (f"Run Python code in a persistent sandbox where {count} tool"
            f"{'' if count == 1 else 's'} are callable as Python functions. "
            "Print what you need to see.")


def instructions(registry: ToolRegistry, name: str = CODE_TOOL_NAME,
                 budget_chars: int = 6_000) -> str:
    """What to put in the system prompt: how to use the code tool, then the catalog."""
    return f"{_GUIDE.format(name=name)}\n\nTools:\n\n{catalog(registry, budget_chars)}"


def render(result: CellResult) -> str:
    """What the model reads after a cell. Never empty."""
    parts: list[str] = []
    for notice in result.notices:
        if "restarted" in notice and result.error and notice in result.error:
            continue
        parts.append(f"[note] {notice}")
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.value is not None:
        parts.append(f"[value] {result.value}")
    if result.has_final:
        parts.append("[final answer given]")
    if result.error:
        parts.append(f"[error]\n{result.error.rstrip()}")
    if result.files_written:
        shown = ", ".join(result.files_written[:20])
        more = len(result.files_written) - 20
        parts.append(f"[files written in /session] {shown}" + (f" and {more} more" if more > 0 else ""))
    if not parts or (not result.stdout and result.value is None and not result.error):
        defined = ", ".join(result.new_names[:30])
        parts.insert(0, "(no output; nothing was printed" +
                     (f"; defined: {defined})" if defined else ")"))
    return "\n".join(parts)
