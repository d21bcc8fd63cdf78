"""What a session keeps after each cell to come back to when a later cell is stopped.

Where the runtime can keep the interpreter itself (`Instance.commit`: the data runtime), the
point is a `CommitPoint` and comes back exactly. Elsewhere the guest pickles its variables,
as a durable snapshot does (`Checkpoint`), and what does not pickle is named when the
session comes back; after a cell that could change only the variables it names, what it
changed comes with its result and is chained on (`Checkpoint.extend`). `Points` keeps a
worker's point up to date, on the guest's thread, between commands. A whole checkpoint or a
commit costs the cell's caller nothing: the cell's result is given first, and a session that
closes at once makes none. A delta is chained on before the result is given (microseconds,
and no wait for the interpreter lock on either side).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ..runtime import CommitPoint, Instance
from ._checkpoint import Checkpoint
from ._limits import Limits

__all__ = ["POINT_WAIT_S", "Checkpoint", "Points"]

log = logging.getLogger("tooliscode")

_KEEPS = frozenset({"cell", "rebind"})
"""Commands whose state is kept (a "restore" keeps what it loaded: `Points.keep`)."""
POINT_WAIT_S = 0.01
"""How long a due point waits for the next command before it is made: when that is the
session closing, no point is needed. Between the cells of a conversation there is a model's
answer to wait for, so the point is made in that time all the same."""
_CHECKPOINT = "checkpoint"
"""The command that has the guest pickle its variables and hand them over (as raw bytes)."""


class Points:
    """One worker's point: set on its guest's thread, read by the session once the worker is
    given up (`settled`)."""

    def __init__(self, instance: Instance, limits: Callable[[], Limits]):
        self._instance, self._limits = instance, limits
        self.point: CommitPoint | Checkpoint | None = None
        self.note: str | None = None
        """Why there is no point, when one was asked for and none could be kept."""
        self.due = False
        """A commit is to be made once the turn has ended."""
        self._dropped = False
        """The commits grew past `Limits.rollback_bytes` and were given up (`commit`): none
        is made again in this run, and the note saying why stands."""
        self._settled = threading.Event()
        """Clear while a commit is under way."""
        self._settled.set()

    def after(self, op: Any, blob: bytes | None, result: Any) -> dict[str, Any] | None:
        """After a command `op` ended with `result`: keep the state it left when it is one
        to keep. Where the guest can commit its interpreter, that happens between turns
        (`due`, then `commit`); else the guest pickles its variables next, in the same
        turn: the command returned does that (its `blob` and result come back here)."""
        if op == _CHECKPOINT:
            self._checkpointed(blob, result)
            return None
        if op not in _KEEPS:
            if op in ("setup", "reset"):  # a new interpreter: nothing to come back to
                self._set(None, None)
            return None
        if self._limits().rollback_bytes == 0:
            self._set(None, "Limits.rollback_bytes is 0: no state is kept")
            return None
        if self._instance.commits:
            self.due = not self._dropped
            return None
        told = result.get("point") if op == "cell" and isinstance(result, dict) else None
        if told == "empty":  # no variables: nothing to come back to but an empty namespace
            self._set(None, None)
            return None
        if told == "same" and isinstance(self.point, Checkpoint):
            return None  # the point holds this state already (see `mark`)
        if isinstance(told, dict) and isinstance(self.point, Checkpoint) \
                and self.point.extend(told, self._limits().rollback_bytes):
            return None
        # A new one each time: a message is the guest's to read. The guest stops pickling
        # past the limit: a state over it costs only that much after each cell.
        return {"op": _CHECKPOINT, "limit": self._limits().rollback_bytes}

    def mark(self, message: dict[str, Any]) -> None:
        """A cell's `message`, as it is handed to the guest: where a checkpoint would follow
        the cell, the guest is asked to say with its result when none is needed (it has no
        variables, or the ones the last checkpoint took): one exchange fewer per such cell."""
        if not self._instance.commits and self._limits().rollback_bytes != 0:
            message["point"] = True

    def commit(self) -> None:
        """Between turns: the interpreter as the point."""
        self.due = False
        self._settled.clear()
        try:
            try:
                point = self._instance.commit()
            except Exception as exc:  # noqa: BLE001 - the session goes on without a point
                log.warning("tooliscode: keeping a rollback point failed: %s", exc)
                point = None
            limit = self._limits().rollback_bytes
            if point is not None and limit is not None and point.size_bytes > limit:
                self._instance.drop_commits()  # it would only grow: no more commits
                self._dropped = True
                self._set(None, _too_big(limit, point.size_bytes))
            else:
                self._set(point, None if point is not None else
                          "this guest could not keep a copy of its memory")
        finally:
            self._settled.set()

    def _checkpointed(self, blob: bytes | None, result: Any) -> None:
        reply = result if isinstance(result, dict) else {}
        limit = self._limits().rollback_bytes
        if reply.get("ok") and reply.get("same") and (self.point is not None
                                                      or self.note is not None):
            return  # the very objects, none changeable: the point, or why there is none, holds
        if reply.get("ok") and reply.get("empty"):
            self._set(None, None)
        elif reply.get("ok") and isinstance(reply.get("too_big"), int) and limit is not None:
            self._set(None, _too_big(limit))  # the pickling stopped there
        elif not reply.get("ok") or blob is None:
            self._set(None, "its variables could not be saved "
                      f"({str(reply.get('error') or 'no data')[:200]})")
        elif limit is not None and len(blob) > limit:
            self._set(None, _too_big(limit, len(blob)))
        else:
            dropped, line = reply.get("dropped"), reply.get("line")
            self._set(Checkpoint(blob, {str(k): str(v) for k, v in dropped.items()}
                                 if isinstance(dropped, dict) else {},
                                 line if type(line) is int else None), None)

    def keep(self, point: Checkpoint) -> None:
        """Between commands: `point`, the state just loaded, is the point."""
        if self._limits().rollback_bytes != 0:
            self._set(point, None)

    def forget(self) -> None:
        """On the guest's thread: the session starts over (a renewal); no point is kept."""
        self._dropped = False
        self._set(None, None)

    def settled(self, timeout: float) -> CommitPoint | Checkpoint | None:
        """The point, once no commit into it is under way (a given-up guest's thread may still
        be finishing one)."""
        self._settled.wait(timeout)
        return self.point

    def _set(self, point: CommitPoint | Checkpoint | None, note: str | None) -> None:
        # A commit point is not closed here: the instance commits into it still, and a new
        # guest may have taken it; it is freed with the last of them.
        self.point, self.note = point, note


def _too_big(limit: int, size: int | None = None) -> str:
    """`size`: the state's, where it is known."""
    state = "" if size is None else f" ({size / 2**20:.1f} MiB)"
    return f"its state{state} is more than Limits.rollback_bytes ({limit / 2**20:.1f} MiB)"
