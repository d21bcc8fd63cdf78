"""The running cell, as its tool calls see it.

A front end hands its code tool something per call (LangChain a config, the Agents SDK a
`ToolContext`, PydanticAI a `RunContext`). The sandbox calls the tools on its own threads and
loops, where context variables do not follow, so the front end's `Cell` rides in the
sandbox's `context` for the length of one cell, and each tool call reads it from there.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..codetool import Sandbox
from ..engine import current_call
from ..errors import ToolError

__all__ = ["Cell", "running"]


@dataclass(kw_only=True)
class Cell:
    """What one call of the code tool gives the calls its cell makes. Front ends subclass it
    with their framework's context."""

    call_id: str = ""
    """The code tool call's id (the model's, when it has one)."""
    tools: Any = None
    """The `Tools` the cell's calls go to (their natives may be newer objects than the ones
    the sandbox was started with, for the same declarations)."""
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    def inner_id(self) -> str:
        """The id of the call being made: `<call_id>:<n>`, the n-th call of the cell."""
        info = current_call()  # the engine numbers them when the cell runs with ids
        return info.id if info is not None else f"{self.call_id}:{next(self._ids)}"


def running(sandbox: Sandbox) -> Cell:
    """The cell running in `sandbox`; a `ToolError` when none is (a call from a task the
    code left running after its cell ended)."""
    cell = sandbox.context
    if not isinstance(cell, Cell):
        raise ToolError("tools can be called only while the code tool runs")
    return cell
