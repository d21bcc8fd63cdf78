"""A checked collection of tools: unique names, valid identifiers, lookups and search."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ._search import SearchIndex
from ._tool import Tool, as_tool

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """Tools by the name the host knows them by; the names the guest calls them by are kept
    only to refuse a second tool under the same one."""

    def __init__(self, tools: Iterable[Any] = ()):
        self._tools: dict[str, Tool] = {}
        self._guest: dict[str, Tool] = {}
        self._index: SearchIndex | None = None
        self._namespaces: set[str] = set()
        for item in tools:
            self.add(as_tool(item))

    def add(self, tool: Tool) -> None:
        """Add one tool; a name the host or the guest would see twice is an error."""
        if tool.name in self._tools:
            raise ValueError(f"two tools are named {tool.name!r}; tool names must be unique")
        qualified = tool.qualified_name
        if qualified in self._guest:
            other = self._guest[qualified].name
            raise ValueError(f"tools {other!r} and {tool.name!r} would both be called "
                             f"{qualified!r} in Python; rename one or give it a python_name")
        if tool.namespace and tool.namespace in self._guest:
            raise ValueError(f"namespace {tool.namespace!r} of tool {tool.name!r} clashes with "
                             "the tool of that name")
        if not tool.namespace and tool.python_name in self._namespaces:
            raise ValueError(f"tool {tool.name!r} clashes with the namespace "
                             f"{tool.python_name!r}")
        self._tools[tool.name] = tool
        self._guest[qualified] = tool
        if tool.namespace:
            self._namespaces.add(tool.namespace)
        self._index = None

    def get(self, name: str) -> Tool | None:
        """By the host name (what the guest sends over the channel)."""
        return self._tools.get(name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def namespaces(self) -> list[str]:
        return sorted(self._namespaces)

    def search(self, query: str, limit: int = 10) -> list[Tool]:
        """Tools ranked by how well their names and descriptions match `query`."""
        if self._index is None:
            self._index = SearchIndex(self)
        return self._index.search(query, limit)
