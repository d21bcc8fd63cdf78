"""The one tool the model sees: its name, schema and instructions (what it reads back after
a cell is _render.py's).

Every integration (ToolIsCode, the framework adapters, the MCP proxy) builds its code tool
from these pieces, so the model reads the same thing everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..tools import ToolRegistry
from ._catalog import catalog

__all__ = ["CODE_TOOL_NAME", "CODE_TOOL_SCHEMA", "FIGURES_NOTE", "LLM_QUERY_NOTE",
           "code_tool_description", "instructions", "with_catalog"]

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

FIGURES_NOTE = ("Matplotlib figures left open at the end of a cell, or shown with `plt.show()`, "
                "are saved as PNG files in /session/figures and shown to you.")
"""The guide line added where the runtime has matplotlib (its `python_note` names it)."""


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
    `python_note`); where that includes matplotlib, the guide says what becomes of figures.
    """
    figures = [FIGURES_NOTE] if "matplotlib" in python else []
    return with_catalog("\n".join([_GUIDE.format(name=name, python=python), *figures, *notes]),
                        registry, budget_chars)


def with_catalog(guide: str, registry: ToolRegistry, budget_chars: int = 6_000) -> str:
    """`guide` followed by the tool catalog: the system prompt part of every code tool."""
    return f"{guide}\n\nTools:\n\n{catalog(registry, budget_chars)}"
