"""The catalog: the text that tells the model which tools it has.

Small tool sets get full stubs; large ones get names with one-line summaries under a budget,
plus how to search for the rest.
"""

from __future__ import annotations

from .codegen import stub, summary
from .registry import ToolRegistry

__all__ = ["catalog"]


def catalog(registry: ToolRegistry, budget_chars: int = 6_000) -> str:
    """The tools as the model should first see them."""
    if not len(registry):
        return "(no tools)"
    stubs = "\n\n".join(stub(t) for t in registry)
    if len(stubs) <= budget_chars:
        return stubs
    lines = [f"- {t.qualified_name}: {summary(t)}" for t in registry]
    text, used = [], 0
    for line in lines:
        if used + len(line) > budget_chars:
            text.append(f"... and {len(lines) - len(text)} more: use search_tools('words').")
            break
        text.append(line)
        used += len(line) + 1
    return "\n".join(text)
