"""What one cell produced, as the host sees it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._pause import PendingCall

__all__ = ["CellImage", "CellResult", "ToolCallRecord"]


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call a cell made."""

    name: str
    arguments: dict[str, Any]
    duration_s: float
    ok: bool
    error: str | None = None


@dataclass(frozen=True)
class CellImage:
    """A picture a cell made (a matplotlib figure it showed or left open), read back from the
    session folder by the host and checked against `Limits.image_bytes` and `image_pixels`."""

    path: str
    """Relative to the session folder, e.g. `figures/figure-3-1.png`."""
    data: bytes = field(repr=False)
    mime: str = "image/png"
    width: int = 0
    height: int = 0


@dataclass(frozen=True)
class CellResult:
    """The outcome of running one cell of code.

    `stdout` and `stderr` are already cut to the session's `Limits.output_chars`;
    `truncated` says so and where the full text was saved.
    """

    ok: bool
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    """`repr()` of the cell's final expression, REPL style; `None` when it had none."""
    error: str | None = None
    """The traceback, trimmed to the cell's own frames, or why the cell could not run."""
    error_type: str | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    duration_s: float = 0.0
    restarted: bool = False
    """The guest was replaced during or before this cell and earlier variables are gone."""
    rolled_back: bool = False
    """The cell was stopped (its time limit, a cancel, a crash) and the session came back to
    its state before the cell, in a new guest (`lost_names`: what could not)."""
    lost_names: tuple[str, ...] = ()
    """Names that existed before a restart or a rollback and are now gone."""
    names: tuple[str, ...] = ()
    """Global names the session holds after this cell."""
    new_names: tuple[str, ...] = ()
    """Global names this cell defined or rebound (at most 300)."""
    new_names_left_out: int = 0
    """How many more names it defined or rebound than `new_names` lists."""
    described: Mapping[str, str] = field(default_factory=dict)
    """For a cell that showed nothing: short descriptions of the names it defined
    (`"list of 5,000 items, the first a dict"`), made without running any user code."""
    truncated: str | None = None
    """A notice when output was cut, naming the file in the session folder with all of it."""
    files_written: tuple[str, ...] = ()
    """Paths in the session folder (relative) that this cell created or changed."""
    final: Any = None
    """The value passed to `final_answer(...)` in the cell, if it was called."""
    has_final: bool = False
    notices: tuple[str, ...] = field(default=())
    """Other things the model should know (a restart, a limit reached)."""
    images: tuple[CellImage, ...] = ()
    """The figures the cell saved, for APIs that can show the model an image."""
    paused: tuple[PendingCall, ...] = ()
    """The cell has not ended: it waits for decisions on these calls (`Session.resume`)."""
