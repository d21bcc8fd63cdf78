"""Resource limits for one sandboxed session."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """What one session may use.

    Every figure is per session; the time, output and tool-call figures are per cell.
    `None` turns a limit off, except for memory, which is always bounded.
    """

    timeout_s: float | None = 30.0
    """Wall time for one cell, tool calls included. A cell still running then is stopped
    and the session comes back to its state before that cell (see `rollback_bytes`)."""

    memory_bytes: int = 512 * 1024 * 1024
    """Guest linear memory. Going past it raises `MemoryError` inside the cell; the guest lives on."""

    output_chars: int | None = 20_000
    """Characters of printed output returned per cell, and of an error's text (each message
    in a traceback keeps a quarter of it, a tool's message as well). Beyond it the head and
    tail are kept and the full text is saved in the session folder."""

    stream_chars: int | None = 1_000_000
    """Characters of a cell's output streamed to `run(on_output=...)` as it is printed; past
    it, one notice says the rest is not streamed (the result still keeps its head and tail,
    as `output_chars` says)."""

    tool_calls: int | None = 1_000
    """Tool calls one cell may make."""

    tool_timeout_s: float | None = None
    """Default time one tool call may take; a tool's own `timeout_s` wins. When `None`, a
    call may use whatever is left of the cell's time."""

    value_chars: int = 4_000
    """Characters kept of the repr of a cell's final expression (the whole repr is saved in
    the session folder too)."""

    spill_bytes: int = 16 * 1024 * 1024
    """How much of an over-long output, error, value or tool message is saved to the session
    folder."""

    disk_bytes: int | None = 1024 * 1024 * 1024
    """Most bytes the session folder may hold; past it, writes fail with "Disk quota exceeded"."""

    disk_entries: int | None = 100_000
    """Most files, folders and links the session folder may hold."""

    image_bytes: int | None = 1_000_000
    """Largest PNG of a matplotlib figure (one shown, or left open when a cell ends). A bigger
    one is saved again at a lower resolution, with a notice; `None`: no limit."""

    image_pixels: int | None = 4_000_000
    """Most pixels (width x height) of such a PNG, bounded the same way."""

    pause_s: float | None = 3600.0
    """How long a cell paused at calls that need a decision (an approval) waits for it; then
    they count as rejected and the cell goes on. Its own `timeout_s` does not run meanwhile."""

    rollback_bytes: int | None = 1024 * 1024 * 1024
    """Most host memory kept, per session, for coming back from a stopped cell: after each
    cell, the session keeps its state (on the data runtime, the memory pages its cells wrote;
    elsewhere its variables, pickled). A cell stopped by its time limit, a cancel or a crash
    then costs only itself. Past this, no state is kept and a stopped cell costs the
    session's variables; 0 turns keeping off (a cell then costs nothing more)."""

    def __post_init__(self) -> None:
        if self.memory_bytes < 32 * 1024 * 1024:
            raise ValueError("Limits.memory_bytes must be at least 32 MiB: CPython needs that to start")
        for name in ("timeout_s", "tool_timeout_s", "pause_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"Limits.{name} must be positive or None")
        for name in ("output_chars", "stream_chars", "tool_calls", "disk_bytes", "disk_entries",
                     "image_bytes", "image_pixels", "rollback_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"Limits.{name} must be >= 0 or None")
