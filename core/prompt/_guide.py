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
    "properties": {"code": {"type": "string"}},
    "required": ["code"],
    "additionalProperties": False,
}
"""The arguments: one string, named for what it is (a description would be sent on every
model call and tell the model nothing more)."""

_GUIDE = """\
`{name}` runs {python} in a sandbox where variables, imports and files in /session persist \
across calls. Call the tools below as functions, process their results in code and print only \
what you need. `await asyncio.gather(...)` runs calls concurrently; `final_answer(value)` ends \
the run with that value as the answer."""
"""The fixed guide, sent on every model call, so it holds only what the model needs before
its first cell. The rest reaches it where it applies (the README's table lists each fact and
where): the catalog's last line names `help` and `search_tools` when the catalog is not
complete, a failed call's error names `ToolError`, a tool call left unawaited in async code
gets an error or warning saying so, a cut output says where the full text is, and a sandbox
rule's error says which rule."""

LLM_QUERY_NOTE = ("`llm_query(prompt: str) -> str` asks a language model and returns its text "
                  "reply: use it to summarise, classify or extract from text inside your code "
                  "(gather several calls to run them concurrently).")
"""The guide line added when a model callable is available inside the sandbox."""

FIGURES_NOTE = "Matplotlib figures a cell leaves open are saved in /session and shown to you."
"""The guide line added where the runtime has matplotlib (its `python_note` names it); a cell
that draws is told again which images it saved."""


def code_tool_description(registry: ToolRegistry, name: str = CODE_TOOL_NAME) -> str:
    """The tool description: short, since it is sent on every call and the instructions
    carry the guide and the catalog."""
    return "Run Python in the persistent sandbox where the tools are functions."


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
    return f"{guide}\n\n{catalog(registry, budget_chars)}"
