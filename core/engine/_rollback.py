"""Coming back from a stopped cell: a new guest, given the session's state before that cell.

A cell can be stopped by its time limit, a cancel, a trap or a host-side fault; the guest it
ran in is then given up. After each cell that ended, its worker kept a point to come back to
(`Worker.point`, see `_points.py`): the interpreter's memory where the runtime can commit it,
else the variables, pickled. `Rollback` loads that point into the next guest the way a
snapshot is loaded (it is a `SessionState` without files: the folder is not rolled back),
and `CameBack` is what the model is told of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..runtime import CommitPoint
from ._points import Checkpoint
from ._snapshot import SessionState
from ._worker import Worker

__all__ = ["CameBack", "Rollback"]

_LISTED = 40
_COMMIT_WAIT_S = 10.0
"""How long a stop waits for a commit the given-up guest's thread is finishing (it copies
what the last cell wrote: milliseconds)."""


@dataclass(frozen=True)
class CameBack:
    """What the session's next guest got of its state, after a stop."""

    exact: bool | None
    """True: the interpreter itself came back; False: its variables, unpickled; None:
    nothing (no point was kept, or it could not be loaded)."""
    missing: dict[str, str] = field(default_factory=dict)
    """Names that could not come back, with the reason."""
    lost: tuple[str, ...] = ()
    """When nothing came back: the names that are gone."""
    why: str | None = None
    """When nothing came back: why no point could be used."""

    def text(self, cell: str = "this cell") -> str:
        """What the model reads: what the session holds now, and what it must make again."""
        if self.exact is None:
            if not self.lost:
                return f"The session is as it was before {cell}: it held no variables."
            names = ", ".join(self.lost[:_LISTED]) + (" ..." if len(self.lost) > _LISTED else "")
            because = f" ({self.why})" if self.why else ""
            return ("The Python interpreter was restarted and its state could not be kept"
                    f"{because}: variables, functions and imports from earlier cells are gone "
                    f"({names}). Files in /session were kept.")
        text = (f"The session is back to its state before {cell}, exactly: every variable, "
                "import, object and random state is as it was." if self.exact else
                f"The session is back to its state before {cell}: its variables, functions, "
                "classes and imports are back.")
        if self.missing:
            listed = "; ".join(f"{k}: {v}" for k, v in sorted(self.missing.items())[:_LISTED])
            text += f" These could not be kept and must be made again: {listed}."
        return text


class Rollback(SessionState):
    """A worker's last point, loaded into a new guest (see the module's docstring)."""

    @classmethod
    def of(cls, worker: Worker | None, names: tuple[str, ...]) -> Rollback | None:
        """The point `worker` (given up) kept, if it has a usable one. `names`: the names
        the session held after the cell that kept it."""
        point = worker.points.settled(_COMMIT_WAIT_S) if worker is not None else None
        meta: dict[str, Any] = {"names": list(names)}
        if isinstance(point, CommitPoint) and point.ready:
            return cls({}, meta, point.plan(), announce=False)
        if isinstance(point, Checkpoint):
            return cls({"state": point.state}, {**meta, "dropped": point.dropped}, None,
                       announce=False)
        return None

    def came_back(self, missing: dict[str, str]) -> CameBack:
        return CameBack(self.memory is not None, missing)

    def notice(self, missing: dict[str, str]) -> str | None:
        return None  # the session says it, with what stopped the cell (`CameBack.text`)
