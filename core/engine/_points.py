"""What a session keeps after each cell to come back to when a later cell is stopped.

Where the runtime can keep the interpreter itself (`Instance.commit`: the data runtime), the
point is a `CommitPoint` and comes back exactly. Elsewhere the guest pickles its variables
after each cell, as a durable snapshot does (`Checkpoint`), and what does not pickle is named
when the session comes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Checkpoint"]


@dataclass(frozen=True)
class Checkpoint:
    """The variables after a cell, as the guest pickled them."""

    data: bytes
    dropped: dict[str, str] = field(default_factory=dict)
    """Names that could not be pickled, with the reason."""
