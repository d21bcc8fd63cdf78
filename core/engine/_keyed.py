"""Sessions by conversation key, for servers: made on first use, closed when left idle.

A code tool serves one conversation through the key `None`; a server passes each
conversation's id instead and gets one interpreter per conversation. Idle ones are closed
(lazily, whenever a session is taken) so memory does not grow with every visitor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["KeyedSessions"]

_REMEMBERED = 10_000
"""How many evicted keys are remembered, to tell a returning conversation what happened."""


class _Closable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=_Closable)


@dataclass
class _Entry(Generic[T]):
    value: T
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0


class KeyedSessions(Generic[T]):
    """Values (sessions) by key, made by `factory`, evicted after `idle_s` unused.

    The key `None` is the instance's own session and is never evicted. `max_sessions` caps the
    keyed ones; past it the least recently used idle one is closed.
    """

    def __init__(self, factory: Callable[[Hashable], T], idle_s: float | None = 1800.0,
                 max_sessions: int | None = None,
                 evict: Callable[[list[T]], None] | None = None):
        self._factory = factory
        self._evict = evict or _close_all
        """Closes the values that `acquire` evicts (now, by default; a caller whose values
        take long to close can hand them to another thread)."""
        self.idle_s = idle_s
        self.max_sessions = max_sessions
        self._entries: OrderedDict[Hashable, _Entry[T]] = OrderedDict()
        self._evicted: OrderedDict[Hashable, str] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def acquire(self, key: Hashable) -> tuple[T, str | None]:
        """The value for `key`, marked busy until `release(key)`; and, when the key's earlier
        value was evicted, why (`"90 s without use"`), to tell the conversation."""
        self._evict([value for _, value in self._sweep(key)])
        with self._lock:
            self._check_open()
            entry = self._take(key)
            if entry is not None:
                return entry.value, None
        value = self._factory(key)
        with self._lock:
            if not self._closed:
                entry = self._take(key)
                if entry is None:  # nobody made one meanwhile
                    self._entries[key] = _Entry(value, busy=1)
                    return value, self._evicted.pop(key, None)
        value.close()  # closed meanwhile, or another caller made the session first
        self._check_open()
        assert entry is not None
        return entry.value, None

    def release(self, key: Hashable) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                entry.busy = max(0, entry.busy - 1)
                entry.last_used = time.monotonic()

    def get(self, key: Hashable) -> T | None:
        """The live value for `key`, without touching it."""
        entry = self._entries.get(key)
        return entry.value if entry is not None else None

    def keys(self) -> list[Hashable]:
        return list(self._entries)

    def drop(self, key: Hashable) -> bool:
        """Close the session of `key` now (a conversation ended)."""
        with self._lock:
            entry = self._entries.pop(key, None)
        if entry is not None:
            entry.value.close()
        return entry is not None

    def evict_idle(self) -> list[Hashable]:
        """Close the sessions idle past `idle_s` now; returns their keys."""
        gone = self._sweep()
        _close_all([value for _, value in gone])
        return [key for key, _ in gone]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            entries = list(self._entries.items())
            self._entries.clear()
        _close_all([entry.value for _, entry in entries])

    # -- internals (call with the lock held unless said otherwise) ---------------------------

    def _check_open(self) -> None:
        if self._closed:
            from ..errors import SessionClosed

            raise SessionClosed("this code tool is closed")

    def _take(self, key: Hashable) -> _Entry[T] | None:
        entry = self._entries.get(key)
        if entry is not None:
            entry.busy += 1
            entry.last_used = time.monotonic()
            self._entries.move_to_end(key)
        return entry

    def _sweep(self, incoming: Hashable = None) -> list[tuple[Hashable, T]]:
        """Take out the entries to evict (idle too long, or over the cap counting `incoming`,
        a key about to be added); takes the lock itself."""
        now = time.monotonic()
        gone: list[tuple[Hashable, T]] = []
        with self._lock:
            keyed = [k for k in self._entries if k is not None]
            adding = incoming is not None and incoming not in self._entries
            over = (len(keyed) + adding - self.max_sessions) if self.max_sessions is not None else 0
            for key in keyed:  # least recently used first
                entry = self._entries[key]
                idle = now - entry.last_used
                if entry.busy or not ((self.idle_s is not None and idle > self.idle_s)
                                      or over > 0):
                    continue
                over -= 1
                del self._entries[key]
                reason = (f"{idle:.0f} s without use" if self.idle_s is not None
                          and idle > self.idle_s else "too many open conversations")
                self._evicted[key] = reason
                self._evicted.move_to_end(key)
                while len(self._evicted) > _REMEMBERED:
                    self._evicted.popitem(last=False)
                gone.append((key, entry.value))
        return gone


def _close_all(values: list[Any]) -> None:
    for value in values:
        try:
            value.close()
        except Exception:
            logging.getLogger("tooliscode").exception("closing an evicted session failed")
