"""Where snapshots live between workers: bytes by conversation key, and a lease per key.

A conversation runs in one worker at a time: the worker that holds its lease. The lease makes
a second worker that gets a call for the same key wait (or fail clearly) instead of both
resuming the same snapshot and one overwriting the other's cells.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod

from ..errors import ToolIsCodeError

__all__ = ["LeaseHeld", "SessionStore", "StoreUnavailable", "version_of"]


class StoreUnavailable(ToolIsCodeError):
    """The store could not be reached or did not answer in time."""


class LeaseHeld(ToolIsCodeError):
    """Another worker holds this conversation and did not let go in time."""


class SessionStore(ABC):
    """Bytes by key, plus leases. Keys are strings; implementations never block for long:
    a store that is down raises `StoreUnavailable`."""

    @abstractmethod
    def get(self, key: str) -> bytes | None:
        """The stored snapshot of `key`, or None."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Store `data` for `key`, replacing what was there as one step (readers never see a
        half-written value)."""

    @abstractmethod
    def version(self, key: str) -> str | None:
        """A short tag that changes whenever `put` stores new bytes for `key` (a worker keeping
        the conversation's live session checks it to know nobody else moved on)."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Forget `key` (a conversation that ended)."""

    @abstractmethod
    def acquire(self, key: str, owner: str, ttl_s: float) -> bool:
        """Take the lease of `key` for `owner` (or renew it if `owner` holds it already).
        False when someone else holds it. A lease left by a dead owner ends by itself."""

    @abstractmethod
    def release(self, key: str, owner: str) -> None:
        """Give the lease back, if `owner` still holds it."""

    # A call in flight: marked when it begins and cleared when its state is stored, so the
    # worker that takes over from one that died mid-call knows that a cell was lost.

    @abstractmethod
    def mark_running(self, key: str, owner: str) -> str | None:
        """Note that `owner` runs a call of `key` now (it holds the lease). Returns the owner
        of an earlier call that began and was never committed (its worker died), if any."""

    @abstractmethod
    def clear_running(self, key: str, owner: str) -> None:
        """`owner`'s call of `key` is over and its state stored: clear its mark."""

    def commit(self, key: str, data: bytes, owner: str) -> None:
        """Store `data` for `key` and clear `owner`'s running mark (one step where the store
        can make it one)."""
        self.put(key, data)
        self.clear_running(key, owner)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and leases this store object holds."""


def version_of(data: bytes) -> str:
    """The version tag stores keep beside `data`: a snapshot's header holds a random id and
    it ends with a check of all its bytes, so these two tell versions apart without reading
    the rest."""
    head = min(len(data), 12 + int.from_bytes(data[8:12], "little"), 12 + 64 * 1024)
    return hashlib.sha256(data[:head] + data[-64:] + len(data).to_bytes(8, "little")
                          ).hexdigest()[:24]
