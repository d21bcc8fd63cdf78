"""A checked collection of tools: unique names, valid identifiers, lookups and search."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Iterable, Iterator

from .tools import Tool, as_tool

__all__ = ["ToolRegistry"]

_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+|[A-Z]+(?![a-z])")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text.replace("_", " "))]


class ToolRegistry:
    """Tools by the name the host knows them by and by the name the guest calls them by."""

    def __init__(self, tools: Iterable[Any] = ()):
        self._tools: dict[str, Tool] = {}
        self._guest: dict[str, Tool] = {}
        self._index: list[tuple[Tool, Counter[str], Counter[str]]] | None = None
        for item in tools:
            self.add(as_tool(item))

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"two tools are named {tool.name!r}; tool names must be unique")
        qualified = tool.qualified_name
        if qualified in self._guest:
            other = self._guest[qualified].name
            raise ValueError(f"tools {other!r} and {tool.name!r} would both be called "
                             f"{qualified!r} in Python; rename one")
        if tool.namespace and tool.namespace in self._guest:
            raise ValueError(f"namespace {tool.namespace!r} clashes with a tool of that name")
        if not tool.namespace and any(t.namespace == tool.python_name for t in self):
            raise ValueError(f"tool {tool.name!r} clashes with a namespace of that name")
        self._tools[tool.name] = tool
        self._guest[qualified] = tool
        self._index = None

    def get(self, name: str) -> Tool | None:
        """By the host name (what the guest sends over the channel)."""
        return self._tools.get(name)

    def by_python_name(self, qualified: str) -> Tool | None:
        return self._guest.get(qualified)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def namespaces(self) -> list[str]:
        return sorted({t.namespace for t in self if t.namespace})

    def search(self, query: str, limit: int = 10) -> list[Tool]:
        """Tools ranked by how well their names and descriptions match `query` (BM25-like,
        names weigh three times as much as descriptions)."""
        terms = _words(query)
        if not terms:
            return []
        if self._index is None:
            self._index = [(t, Counter(_words(t.qualified_name)), Counter(_words(t.description)))
                           for t in self]
        n = len(self._index)
        df = Counter(w for _, name, desc in self._index for w in set(name) | set(desc))
        scored = []
        for tool, name, desc in self._index:
            score = 0.0
            for term in terms:
                idf = math.log(1 + (n - df.get(term, 0) + 0.5) / (df.get(term, 0) + 0.5))
                hits = 3 * name.get(term, 0) + desc.get(term, 0)
                if not hits:
                    hits = 0.5 * sum(1 for w in name if w.startswith(term) or term.startswith(w)
                                     and len(w) > 3)
                score += idf * hits / (hits + 1.2)
            if query.lower() in tool.qualified_name.lower():
                score += 2
            if score > 0:
                scored.append((score, tool.qualified_name, tool))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [tool for _, _, tool in scored[: max(0, limit)]]
