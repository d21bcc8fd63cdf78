"""What the model reads about a tool set: the guide with the catalog, and the code tool's
description, built once per tool set.

Front ends rebuild their tool lists often (per run, per step, per listing of an MCP server),
and a catalog of hundreds of tools takes milliseconds to build, so the last few are kept, by
the tools' content: two tool sets that read the same share one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from ..codetool import fingerprint
from ..prompt import CODE_TOOL_NAME, code_tool_description, instructions
from ..tools import Tool, ToolRegistry

__all__ = ["Catalog"]

_KEPT = 32
_made: OrderedDict[Hashable, Catalog] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class Catalog:
    """The guide and catalog of one tool set (`instructions`), and the code tool's short
    `description`."""

    instructions: str
    description: str

    @classmethod
    def of(cls, tools: Sequence[Tool], name: str = CODE_TOOL_NAME, *,
           python: str = "Python 3.12", budget_chars: int = 6_000,
           notes: Iterable[str] = ()) -> Catalog:
        """The catalog of `tools` (declarations: their functions are not read). A tool set
        the registry refuses (two tools of one name) raises `ValueError`."""
        notes = tuple(notes)
        key = (fingerprint(tools), name, python, budget_chars, notes)
        with _lock:
            made = _made.get(key)
            if made is not None:
                _made.move_to_end(key)
                return made
        registry = ToolRegistry(tools)
        made = cls(instructions(registry, name, budget_chars, notes=notes, python=python),
                   code_tool_description(registry, name))
        with _lock:
            _made[key] = made
            while len(_made) > _KEPT:
                _made.popitem(last=False)
        return made

    def tool_description(self, in_description: bool) -> str:
        """What the code tool's description says: the whole catalog, or the short text."""
        return self.instructions if in_description else self.description
