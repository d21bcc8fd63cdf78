"""What one framework supplies to stand on the kit, and nothing else.

Like an HTTP client's transport, the base is the interface only: each front end implements
how its framework declares and calls a tool, which conversation a call belongs to, how a
reply becomes the framework's content, and how a pause becomes its pending structure. The
kit does the rest (options, catalog, sandboxes, the façade).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable
from typing import Any, ClassVar, Generic, TypeVar

from ..codetool import Reply
from ._binding import Binding
from ._cell import Cell
from ._output import OutputSink

__all__ = ["Hooks"]

N = TypeVar("N")
C = TypeVar("C", bound=Cell)


class Hooks(ABC, Generic[N, C]):
    """One framework's side of code mode; `N` is its tool type, `C` its `Cell`."""

    asynchronous: ClassVar[bool] = True
    """`call` returns an awaitable, which the sandbox awaits on the runner's loop. When
    false, `call` runs on the sandbox's thread (it may still return an awaitable)."""
    approves: ClassVar[bool] = False
    """The calls that need approval get it through the front end: the cell pauses at them
    (`pause` makes the framework's pending structure), or the code tool's own call is
    approved first. When false, a call whose tool always needs approval is refused before
    `call` runs (and `call` refuses the ones its framework's policy asks about)."""

    @abstractmethod
    def declare(self, native: N) -> Binding[N]:
        """`native` as the sandbox declares it (see `Binding.of`)."""

    @abstractmethod
    def call(self, cell: C, binding: Binding[N], arguments: dict[str, Any], call_id: str) -> Any:
        """Run one call the code makes, as the framework runs the model's: its value, or a
        `ToolError` the code sees. `call_id` is the call's own id (`<code call id>:<n>`)."""

    @abstractmethod
    def render(self, reply: Reply) -> Any:
        """The framework's content for what the model reads back."""

    def key(self, context: Any) -> Hashable:
        """The conversation a call of the code tool belongs to, from what the framework hands
        the code tool (`None`: the one conversation of a front end that keeps no others)."""
        return None

    def output(self, cell: C) -> OutputSink | None:
        """Where the framework shows what this call's code prints while it runs (a stream
        writer, an event, a progress notification); None when it has no such stream, or this
        run is not streamed. Called once per call of the code tool, where the framework runs
        it."""
        return None

    def pause(self, cell: C, reply: Reply) -> Any:
        """The framework's pending structure for a cell paused at calls needing a decision."""
        raise NotImplementedError(f"{type(self).__name__} cannot pause a cell")
