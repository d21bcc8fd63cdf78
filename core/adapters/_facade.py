"""What every front end offers over the interpreters it keeps, with one meaning everywhere.

Each adapter is a `Facade` over its `code_tool`: the same six names, whatever its framework
calls a conversation (a thread, a session, a crew, a workflow context).
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

from ..codetool import CodeTool, Toolbox
from ..engine import OnOutput, PendingCall, Session
from ._cell import Cell
from ._options import Options
from ._tools import Tools

__all__ = ["Facade", "ToolsFacade"]


class Facade:
    """`code_tool`, `session(key)`, `live()`, `paused_for(call_id)`, `drop(key)`, `close()`."""

    _code_tool: CodeTool

    @property
    def code_tool(self) -> CodeTool:
        """What runs the cells: an interpreter per conversation (or per run)."""
        return self._code_tool

    def session(self, key: Hashable = None) -> Session:
        """Conversation `key`'s session, started now if need be (e.g. to read or put files
        in its folder), with the front end's tools."""
        return self.code_tool.session(key, self._session_tools())

    def live(self) -> list[Hashable]:
        """The conversations that have a live interpreter."""
        return self.code_tool.keys

    def paused_for(self, call_id: str, key: Hashable = None) -> tuple[PendingCall, ...]:
        """The calls the cell paused in code tool call `call_id` waits on (conversation
        `key`'s, or a run's); empty when no cell is paused there."""
        return self.code_tool.paused_calls(call_id, key=key)

    def drop(self, key: Hashable = None) -> bool:
        """Close one conversation's interpreter now; its next call starts a fresh one."""
        return self.code_tool.drop(key)

    def close(self) -> None:
        """Close every interpreter."""
        self.code_tool.close()

    def _session_tools(self) -> Toolbox | None:
        """The tools `session` starts an interpreter with (`None`: the code tool's own)."""
        return None


class ToolsFacade(Facade):
    """A `Facade` over one tool set: the tools the code calls, and those `callers` gives the
    model itself."""

    _tools: Tools[Any, Any]
    _options: Options

    @property
    def tools(self) -> list[Any]:
        """The wrapped tools the code can call."""
        return self._tools.natives()

    @property
    def direct_tools(self) -> list[Any]:
        """The tools `callers` gives the model itself ("direct" or "both"): give them to the
        agent beside the code tool."""
        return list(self._tools.direct)

    def _serve(self, tools: Tools[Any, Any], options: Options, *, keep_spare: bool = False,
               workdir: str | Path | None = None) -> None:
        """Take `tools`, and a code tool made by `options` that runs them."""
        self._tools = tools
        self._options = options
        self._code_tool = options.code_tool(tools.toolbox, keep_spare=keep_spare,
                                            workdir=workdir)

    def _output(self, cell: Cell, call_id: str | None = None) -> OnOutput | None:
        """Where what `cell`'s code prints goes while it runs, as chunks of code tool call
        `call_id` (the cell's by default): the framework's stream (`Hooks.output`) and
        `Options.on_output` (None: nowhere, so nothing streams)."""
        return self._options.output(call_id or cell.call_id, self._tools.hooks.output(cell))

    def _session_tools(self) -> Toolbox:
        return self._tools.toolbox
