"""What every front end offers over the interpreters it keeps, with one meaning everywhere.

Each adapter is a `Facade` over its `code_tool`: the same six names, whatever its framework
calls a conversation (a thread, a session, a crew, a workflow context).
"""

from __future__ import annotations

from collections.abc import Hashable

from ..codetool import CodeTool, Toolbox
from ..engine import PendingCall, Session

__all__ = ["Facade"]


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
