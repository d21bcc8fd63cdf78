"""The one tool the model sees: its name, schema, instructions, and how results read back.

Every integration (ToolIsCode, the framework adapters, the MCP proxy) builds its code tool
from these pieces, so the model reads the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..engine.result import CellResult
from ..tools.registry import ToolRegistry
from .catalog import catalog
from .images import images_line

__all__ = ["CODE_TOOL_NAME", "CODE_TOOL_SCHEMA", "LLM_QUERY_NOTE", "code_tool_description",
           "instructions", "render", "with_catalog"]

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
`{name}` runs {python} in a sandboxed session that persists for the whole conversation:
variables, functions and imports stay defined between calls. The tools below are Python
functions already defined there; call them directly, for example `rows = some_tool(arg=1)`.
Do the work in code: loop, filter, join and aggregate tool results there, and print only what
you need, since a tool's result reaches you only through what you print or the value of the
last expression. A result without a declared type is plain JSON data (dicts, lists, strings):
look at its shape first, e.g. `print(type(r), len(r), str(r)[:300])`, then process all of it.
Independent calls run concurrently with `await asyncio.gather(tool_a(...), tool_b(...))`;
in async code (a cell that uses `await` included) every tool call must be awaited.
A failed call raises `ToolError`. `search_tools("words")` finds tools by name and description,
`help(tool)` shows one in full, and `final_answer(value)` ends the run with that value as the
answer. The working directory /session is readable and writable and keeps its files; there is
no network access."""

LLM_QUERY_NOTE = ("`llm_query(prompt: str) -> str` asks a language model and returns its text "
                  "reply: use it to summarise, classify or extract from text inside your code "
                  "(gather several calls to run them concurrently).")
"""The guide line added when a model callable is available inside the sandbox."""

_NO_OUTPUT = "(the cell ran and printed nothing"
_SHOWN_NAMES = 30
_SHOWN_FILES = 20


def code_tool_description(registry: ToolRegistry, name: str = CODE_TOOL_NAME) -> str:
    """The tool description: short, since the instructions carry the catalog."""
    count = len(registry)
    return (f"Run Python code in a persistent sandbox where {count} tool"
            f"{' is' if count == 1 else 's are'} callable as Python functions. "
            "Print what you need to see.")


def instructions(registry: ToolRegistry, name: str = CODE_TOOL_NAME,
                 budget_chars: int = 6_000, notes: Iterable[str] = (),
                 python: str = "Python 3.12") -> str:
    """What to put in the system prompt: how to use the code tool, then the catalog.

    `notes` are extra guide lines, such as `LLM_QUERY_NOTE` for helpers outside the catalog.
    `python` says which Python the sandbox runs, and with which libraries (a runtime's
    `python_note`).
    """
    return with_catalog("\n".join([_GUIDE.format(name=name, python=python), *notes]), registry,
                        budget_chars)


def with_catalog(guide: str, registry: ToolRegistry, budget_chars: int = 6_000) -> str:
    """`guide` followed by the tool catalog: the system prompt part of every code tool."""
    return f"{guide}\n\nTools:\n\n{catalog(registry, budget_chars)}"


def _defined(result: CellResult, reprs: Mapping[str, str] | None) -> str:
    names = list(result.new_names[:_SHOWN_NAMES])
    if not names:
        return "; it defined no new names)"
    shown = [f"{n} = {reprs[n]}" if reprs and n in reprs else n for n in names]
    more = len(result.new_names) - len(names)
    return "; it defined: " + ", ".join(shown) + (f" and {more} more)" if more > 0 else ")")


def render(result: CellResult, reprs: Mapping[str, str] | None = None) -> str:
    """What the model reads after a cell: notices, output, value, error, files. Never empty.

    `reprs` maps names the cell defined to short descriptions, shown when nothing was printed;
    by default the ones the guest made (`result.described`).
    """
    if reprs is None:
        reprs = result.described
    parts: list[str] = []
    for notice in result.notices:
        if not (result.error and notice in result.error):
            parts.append(f"[note] {notice}")
    if result.stdout:
        parts.append(result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.value is not None:
        parts.append(f"[value] {result.value}")
    if result.error:
        parts.append(f"[error]\n{result.error.rstrip()}")
    if result.has_final:
        parts.append(f"[final answer] {_brief(result.final)}")
    if result.files_written:
        shown = ", ".join(result.files_written[:_SHOWN_FILES])
        more = len(result.files_written) - _SHOWN_FILES
        parts.append(f"[files written in /session] {shown}"
                     + (f" and {more} more" if more > 0 else ""))
    if result.images:
        parts.append(images_line(result) or "")
    silent = not (result.stdout or result.stderr or result.value is not None or result.error
                  or result.has_final)
    if silent:
        parts.insert(0, _NO_OUTPUT + _defined(result, reprs))
    return "\n".join(parts)


def _brief(value: Any, limit: int = 500) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit:,} more characters]"
