"""`Reply`: what running one piece of code answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine import CellImage, CellResult, PendingCall

__all__ = ["Outcome", "Reply"]


class Outcome:
    """What a cell's `result` says, for the things that carry one."""

    result: CellResult | None

    @property
    def ok(self) -> bool:
        """The cell ran and raised nothing."""
        return self.result is not None and self.result.ok

    @property
    def has_final(self) -> bool:
        """The code called `final_answer(value)`."""
        return self.result is not None and self.result.has_final

    @property
    def final(self) -> Any:
        """The value the code passed to `final_answer`, if it did."""
        return self.result.final if self.result is not None else None

    @property
    def paused(self) -> tuple[PendingCall, ...]:
        """The calls the cell waits on, when it paused for decisions (continue it with
        `run_code(..., call_id=..., decisions=...)`)."""
        return self.result.paused if self.result is not None else ()

    @property
    def images(self) -> tuple[CellImage, ...]:
        """The figures the cell made, for the front ends whose API can carry images."""
        return self.result.images if self.result is not None else ()


@dataclass(frozen=True)
class Reply(Outcome):
    """The text the model reads (notices included), and the cell's result.

    `result` is `None` when the sandbox failed to run the code at all; `text` says why.
    """

    text: str
    result: CellResult | None = None
