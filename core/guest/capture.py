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
        pass

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
            if self.limit is not None and self.total > self.limit:
                self._overflow()
            return n
        self._keep(s)
        self._save(s)
        return n

    def _overflow(self) -> None:
        """The limit was just passed: switch from keeping everything to head and tail."""
        everything = "".join(self._parts)
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
            self._tail.append(s)
            self._tail_len += len(s)
            while self._tail_len - len(self._tail[0]) >= self._tail_room:
                self._tail_len -= len(self._tail.popleft())

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
