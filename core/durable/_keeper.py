"""`Keeper`: conversations whose sessions live in a store, so any worker can take the next call.

A call for a key takes the key's lease (`begin`), uses the session this process already holds
if nobody has moved the conversation on since (the store's version says so; `current`), else
restores it from the store (`fetch`). After the call the session is saved and the lease given
back on another thread (`end`), so the answer is not held up; the next call for the key waits
for that save. `checkout`/`checkin` do all of it for a plain session per key.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..engine import Session
from ..errors import SnapshotError
from ._store import LeaseHeld, SessionStore, StoreUnavailable, version_of

__all__ = ["Keeper", "UNREACHABLE", "UNRESTORABLE"]

log = logging.getLogger("tooliscode")

UNREACHABLE = ("The session store could not be reached ({error}); this is a new Python "
               "session: earlier variables are gone.")
UNRESTORABLE = ("The saved session could not be restored ({error}); this is a new Python "
                "session: earlier variables are gone.")


@dataclass
class _Key:
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held from `begin` until the save after the call is stored."""
    version: str | None = None
    """The store's version of the session held here (None: none held, or unknown)."""
    renewing: threading.Event | None = None
    session: Session | None = None
    """For `checkout`/`checkin` only: the plain session kept for this key."""


@dataclass
class Keeper:
    """Leases, versions and saves of conversations kept in `store`.

    `on_store_error`: "error" raises `StoreUnavailable`; "fresh" goes on without the store,
    and the model is told it has a new session."""

    store: SessionStore
    lease_s: float = 15.0
    """How long a lease lasts unrenewed: how long a killed worker's conversation waits."""
    wait_s: float = 10.0
    """How long a call waits for another worker's lease before `LeaseHeld`."""
    on_store_error: Literal["error", "fresh"] = "error"
    key: bytes | str | None = None
    """Signs the snapshots (else `TOOLISCODE_SNAPSHOT_KEY`, else unsigned)."""
    owner: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:"
                                                f"{uuid.uuid4().hex[:8]}")
    _keys: dict[str, _Key] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _entry(self, key: str) -> _Key:
        with self._lock:
            return self._keys.setdefault(key, _Key())

    # -- the steps of one call ----------------------------------------------------------------

    def begin(self, key: str) -> tuple[str | None, str | None]:
        """Take `key` for one call: its lease, and the store's version of its session.
        Returns (version, notice); the notice says the store was unreachable ("fresh")."""
        entry = self._entry(key)
        entry.lock.acquire()
        try:
            self._lease(key, entry)
            return self.store.version(key), None
        except StoreUnavailable as exc:
            self._stop_renewing(entry)
            if self.on_store_error == "error":
                entry.lock.release()
                raise
            entry.version = None
            return None, UNREACHABLE.format(error=exc)
        except BaseException:
            self._stop_renewing(entry)
            entry.lock.release()
            raise

    def current(self, key: str, version: str | None) -> bool:
        """Is the session held here for `key` the one the store has?"""
        return version is not None and self._entry(key).version == version

    def fetch(self, key: str, version: str | None) -> bytes | None:
        """The stored snapshot of `key` (call between `begin` and `end`)."""
        entry = self._entry(key)
        blob = self.store.get(key) if version is not None else None
        entry.version = version if blob is not None else None
        return blob

    def end(self, key: str, session: Session | None, *, wait: bool = False) -> None:
        """The call is done: save `session` and give the lease back, on another thread
        (`wait=True`: here)."""
        entry = self._entry(key)
        if wait:
            self._save(key, entry, session)
        else:
            threading.Thread(target=self._save, args=(key, entry, session), daemon=True,
                             name="tooliscode-save").start()

    def settle(self, timeout_s: float = 30.0) -> None:
        """Wait (up to `timeout_s` per key) for the saves still running, so that closing the
        sessions they snapshot does not lose the last answer's state."""
        with self._lock:
            entries = list(self._keys.values())
        for entry in entries:
            if entry.lock.acquire(timeout=timeout_s):
                entry.lock.release()

    def forget(self, key: str) -> None:
        """The conversation ended: remove it from the store."""
        with self._lock:
            self._keys.pop(key, None)
        self.store.delete(key)

    def reload(self, session: Session, blob: bytes) -> bool:
        """Load the newer snapshot into the session this worker still holds (no new
        interpreter to boot; see `Session.load`). False where a new session must take it:
        an exact snapshot, or one this session cannot load (restoring it says why)."""
        if session.closed or session.runtime.turn_based:
            return False
        try:
            return session.load(blob, key=self.key)
        except SnapshotError:
            return False

    # -- a plain session per key ----------------------------------------------------------------

    def checkout(self, key: str, make: Callable[[], Session],
                 restore: Callable[[bytes], Session]) -> tuple[Session, str | None]:
        """`key`'s session, current as of the store, and a notice for the model when it is
        not the one the conversation had. Give it back with `checkin(key)`."""
        version, notice = self.begin(key)
        entry = self._entry(key)
        try:
            if entry.session is not None and (notice or self.current(key, version)):
                return entry.session, None
            blob = None if notice else self.fetch(key, version)
            held, entry.session = entry.session, None
            if held is not None:  # another worker moved the conversation on
                if blob is not None and self.reload(held, blob):
                    entry.session = held
                    return held, None
                held.close()
            if blob is not None:
                try:
                    entry.session = restore(blob)
                except SnapshotError as exc:
                    notice = UNRESTORABLE.format(error=exc)
            if entry.session is None:
                entry.session = make()
            return entry.session, notice
        except BaseException:
            self.end(key, None, wait=True)
            raise

    def checkin(self, key: str, *, wait: bool = False) -> None:
        self.end(key, self._entry(key).session, wait=wait)

    def close(self) -> None:
        """Close the plain sessions held here (their last saves stay in the store)."""
        with self._lock:
            entries, self._keys = list(self._keys.values()), {}
        for entry in entries:
            if entry.session is not None:
                entry.session.close()

    # -- internals ------------------------------------------------------------------------------

    def _lease(self, key: str, entry: _Key) -> None:
        deadline = time.monotonic() + self.wait_s
        # The usual wait is another worker's save, 5 to 20 ms: asked often at first, the
        # lease is taken within a millisecond or so of its release (each try is a round trip).
        pause = 0.001
        while not self.store.acquire(key, self.owner, self.lease_s):
            if time.monotonic() >= deadline:
                raise LeaseHeld(f"conversation {key!r} is busy in another worker (waited "
                                f"{self.wait_s:g} s); try again")
            time.sleep(pause)
            pause = min(pause * 1.15, 0.1)
        stop = entry.renewing = threading.Event()
        threading.Thread(target=self._renew, args=(key, stop), daemon=True,
                         name="tooliscode-lease").start()

    def _renew(self, key: str, stop: threading.Event) -> None:
        """Keep the lease while this process works on the conversation (a long cell or
        save); a process that dies stops renewing, and the lease runs out."""
        while not stop.wait(self.lease_s / 3):
            try:
                self.store.acquire(key, self.owner, self.lease_s)
            except StoreUnavailable:
                log.warning("tooliscode: could not renew the lease of %r", key)

    @staticmethod
    def _stop_renewing(entry: _Key) -> None:
        if entry.renewing is not None:
            entry.renewing.set()
            entry.renewing = None

    def _save(self, key: str, entry: _Key, session: Session | None) -> None:
        try:
            if session is not None and not session.closed:
                blob = session.snapshot(key=self.key)
                self.store.put(key, blob)
                entry.version = version_of(blob)
        except Exception:  # noqa: BLE001 - the next call restores the last good save
            log.exception("tooliscode: saving conversation %r failed", key)
            entry.version = None
        finally:
            self._stop_renewing(entry)
            try:
                self.store.release(key, self.owner)
            except StoreUnavailable:
                log.warning("tooliscode: could not release the lease of %r", key)
            entry.lock.release()
