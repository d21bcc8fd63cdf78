"""Capturing a cell's printed output without letting it grow without bound.

Up to `limit` characters are kept whole. Past that, the head and the tail are kept (60/40)
and everything, up to `spill_bytes`, is written to a file in the session folder so the
model can read or grep it in the next cell.
"""

from __future__ import annotations

import collections
import io
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Capture", "clip"]

_NEVER = float("inf")


class Capture:
    """A text stream that keeps a bounded view of what was written to it.

    A plain class rather than an `io.TextIOBase`: one is made per cell and stream, and this
    is several times cheaper to create in the guest.
    """

    encoding = "utf-8"
    errors = "surrogateescape"
    closed = False

    def __init__(self, name: str, limit: int | None, spill_path: str | None, spill_bytes: int):
        self.name = name
        self.limit = limit
        self.total = 0
        self._parts: list[str] = []
        self._head: list[str] = []
        self._head_len = 0
        self._head_room = 0
        self._tail: collections.deque[str] = collections.deque()
        self._tail_len = 0
        self._tail_room = 0
        self._spill_path = spill_path
        self._spill_left = spill_bytes
        self._spill: Any = None
        self.spilled: str | None = None
        self.spill_full = False
        self._mark: float = limit if limit is not None else _NEVER
        """The total past which a write calls `_crossed`: the limit, or sooner for a
        `streamer`. One comparison per write is all a cell that does not stream pays."""
        self.streamer: Any = None
        """The cell's `stream.Streamer` when its output is sent to the host as it comes."""
        self.sent = 0
        """Parts (of `_parts`) the streamer has taken."""
        self.taken = 0
        """The total when the streamer last took what was written."""
        self.pend: list[str] | None = None
        """Past the limit, what the streamer has not taken yet (`_parts` no longer holds it)."""

    @property
    def overflowed(self) -> bool:
        """True once more than `limit` characters were written: only head and tail are kept."""
        return bool(self._head_room)

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        if self.streamer is not None:  # `print(..., flush=True)`: what waits goes now
            self.streamer.flush()

    def fileno(self) -> int:
        raise io.UnsupportedOperation("captured output has no file descriptor")

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        self.total += n
        if not self._head_room:  # still keeping everything
            self._parts.append(s)
        else:
            self._keep(s)
            self._save(s)
            if self.pend is not None:
                self.pend.append(s)
        if self.total > self._mark:
            self._crossed()
        return n

    def watch(self, at: float) -> None:
        """Call the streamer's `crossed` once the total passes `at` (the limit still first)."""
        limit = self.limit
        self._mark = at if self._head_room or limit is None or at < limit else limit

    def unwatch(self) -> None:
        """No streamer any more: only the limit is watched."""
        self.streamer, self.pend = None, None
        self._mark = self.limit if not self._head_room and self.limit is not None else _NEVER

    def take(self) -> str:
        """What was written since the streamer last took it."""
        self.taken = self.total
        if self.pend is not None:
            text = "".join(self.pend)
            self.pend.clear()
            return text
        parts = self._parts
        text = "".join(parts[self.sent:])
        self.sent = len(parts)
        return text

    def _crossed(self) -> None:
        if not self._head_room and self.limit is not None and self.total > self.limit:
            self._overflow()
        streamer = self.streamer  # tested and called as one: the streaming may end any time
        if streamer is not None:
            streamer.crossed(self)
        else:
            self.unwatch()

    def _overflow(self) -> None:
        """The limit was just passed: switch from keeping everything to head and tail."""
        everything = "".join(self._parts)
        if self.streamer is not None:  # what it has not taken is kept for it
            self.pend = self._parts[self.sent:]
        self._parts = []
        self._head_room = max(1, int(self.limit * 0.6)) if self.limit else 1
        self._tail_room = max(1, (self.limit or 1) - self._head_room)
        if self._spill_path:
            try:
                os.makedirs(os.path.dirname(self._spill_path), exist_ok=True)
                self._spill = open(self._spill_path, "w", encoding="utf-8",
                                   errors="surrogateescape")
                self.spilled = self._spill_path
            except OSError:
                self._spill = None
        self._keep(everything)
        self._save(everything)

    def _keep(self, s: str) -> None:
        if self._head_len < self._head_room:
            take = s[: self._head_room - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            s = s[len(take):]
        if s:
            tail = self._tail
            tail.append(s)
            self._tail_len += len(s)
            # An `if` before the `while`: most writes drop one part, and a loop's jump back
            # is what a streaming cell's monitor watches (see `stream.py`).
            if self._tail_len - len(tail[0]) >= self._tail_room:
                self._tail_len -= len(tail.popleft())
                while self._tail_len - len(tail[0]) >= self._tail_room:
                    self._tail_len -= len(tail.popleft())

    def _save(self, s: str) -> None:
        if self._spill is None or self._spill_left <= 0:
            return
        chunk = s[: self._spill_left]
        try:
            self._spill.write(chunk)
        except (OSError, UnicodeError):
            self._spill_left = 0
            return
        self._spill_left -= len(chunk)
        if self._spill_left <= 0:
            self.spill_full = True

    def result(self) -> dict[str, Any]:
        """The kept text, with a marker where characters were cut, and the figures."""
        if self._spill is not None:
            try:
                self._spill.close()
            except OSError:
                pass
            self._spill = None
        if not self._head_room and not self._tail_room:
            return {"text": "".join(self._parts), "total": self.total, "cut": 0}
        tail = "".join(self._tail)[-self._tail_room:]
        head = "".join(self._head)
        cut = self.total - len(head) - len(tail)
        marker = f"\n[... {cut:,} characters cut ...]\n"
        return {"text": head + marker + tail, "total": self.total, "cut": cut,
                "saved": self.spilled, "saved_all": self.spilled is not None and not self.spill_full}


def clip(text: str, limit: int | None) -> str:
    """`text` kept whole up to `limit` characters, else its head and tail with the marker
    `Capture` puts where it cut."""
    if limit is None or len(text) <= limit:
        return text
    kept = Capture("text", limit, None, 0)
    kept.write(text)
    return kept.result()["text"]
