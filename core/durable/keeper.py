"""`Keeper`: conversations whose sessions live in a store, so any worker can take the next call.

A call for a key takes the key's lease, then uses the session this process already holds if
nobody else has moved the conversation on since (the store's version says so), else restores
it from the store. After the call the session is saved and the lease given back on another
thread, so the answer is not held up; the next call for the key waits for that save.
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

from ..engine.session import Session
from .envelope import SnapshotError
from .store import LeaseHeld, SessionStore, StoreUnavailable, version_of

__all__ = ["Keeper"]

log = logging.getLogger("tooliscode")


@dataclass
class _Held:
    session: Session | None = None
    version: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held from `checkout` until the save after the call is stored."""
    leased: threading.Event | None = None
    """Set to stop renewing the lease (while a long cell or save runs, it must not lapse)."""


@dataclass
class Keeper:
    """Sessions by conversation key, kept in `store` between calls.

    `make()` starts a new session; `restore(blob)` rebuilds one (both with the caller's tools,
    limits and runtime). `on_store_error`: "error" raises `StoreUnavailable`; "fresh" goes on
    with a new session and tells the model so."""

    store: SessionStore
    make: Callable[[], Session]
    restore: Callable[[bytes], Session]
    lease_s: float = 15.0
    """How long a lease lasts without renewal: how long a killed worker's conversation waits."""
    wait_s: float = 10.0
    """How long a call waits for another worker's lease before `LeaseHeld`."""
    on_store_error: Literal["error", "fresh"] = "error"
    key: bytes | str | None = None
    """Signs the snapshots (else `TOOLISCODE_SNAPSHOT_KEY`, else unsigned)."""
    owner: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}:"
                                                f"{uuid.uuid4().hex[:8]}")
    _held: dict[str, _Held] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def checkout(self, key: str) -> tuple[Session, str | None]:
        """The session of `key`, current as of the store, with a notice for the model when
        it is not the one the conversation had. Hold it until `checkin(key)`."""
        with self._lock:
            held = self._held.setdefault(key, _Held())
        held.lock.acquire()
        try:
            return self._checkout(key, held)
        except BaseException:
            if held.leased is not None:
                held.leased.set()
            held.lock.release()
            raise

    def _checkout(self, key: str, held: _Held) -> tuple[Session, str | None]:
        try:
            self._lease(key, held)
            version = self.store.version(key)
        except StoreUnavailable as exc:
            if self.on_store_error == "error":
                raise
            if held.session is None:
                held.session = self.make()
                return held.session, (f"The session store could not be reached ({exc}); this "
                                      "is a new Python session: earlier variables are gone.")
            return held.session, None
        if held.session is not None and held.version == version:
            return held.session, None
        if held.session is not None:  # another worker moved the conversation on
            held.session.close()
            held.session = None
        blob = self.store.get(key) if version is not None else None
        notice = None
        if blob is not None:
            try:
                held.session = self.restore(blob)
            except SnapshotError as exc:
                notice = (f"The saved session could not be restored ({exc}); this is a new "
                          "Python session: earlier variables are gone.")
        if held.session is None:
            held.session = self.make()
        held.version = version
        return held.session, notice

    def _lease(self, key: str, held: _Held) -> None:
        deadline = time.monotonic() + self.wait_s
        pause = 0.005
        while not self.store.acquire(key, self.owner, self.lease_s):
            if time.monotonic() >= deadline:
                raise LeaseHeld(f"conversation {key!r} is busy in another worker (waited "
                                f"{self.wait_s:g} s); try again")
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        stop = held.leased = threading.Event()
        threading.Thread(target=self._renew, args=(key, stop), daemon=True,
                         name="tooliscode-lease").start()

    def _renew(self, key: str, stop: threading.Event) -> None:
        """Keep the lease while this process works on the conversation; a process that dies
        stops renewing, and the lease runs out."""
        while not stop.wait(self.lease_s / 3):
            try:
                self.store.acquire(key, self.owner, self.lease_s)
            except StoreUnavailable:
                log.warning("tooliscode: could not renew the lease of %r", key)

    def checkin(self, key: str, *, wait: bool = False) -> None:
        """The call is done: save the session and give the lease back, on another thread
        (`wait=True`: here)."""
        held = self._held[key]
        if wait:
            self._save(key, held)
        else:
            threading.Thread(target=self._save, args=(key, held), daemon=True,
                             name="tooliscode-save").start()

    def _save(self, key: str, held: _Held) -> None:
        try:
            session = held.session
            if session is not None and not session.closed:
                blob = session.snapshot(key=self.key)
                self.store.put(key, blob)
                held.version = version_of(blob)
        except Exception:  # noqa: BLE001 - the next call restores the last good save
            log.exception("tooliscode: saving conversation %r failed", key)
            held.version = None
        finally:
            if held.leased is not None:
                held.leased.set()
                held.leased = None
            try:
                self.store.release(key, self.owner)
            except StoreUnavailable:
                log.warning("tooliscode: could not release the lease of %r", key)
            held.lock.release()

    def evict(self, key: str) -> None:
        """Save the conversation and free its session here (idle, or too many): it is not
        lost, the next call restores it."""
        held = self._held.get(key)
        if held is None:
            return
        self.checkout(key)
        self.checkin(key, wait=True)
        with held.lock:
            session, held.session = held.session, None
            with self._lock:
                self._held.pop(key, None)
        if session is not None:
            session.close()

    def drop(self, key: str) -> None:
        """The conversation ended: forget it here and in the store."""
        with self._lock:
            held = self._held.pop(key, None)
        if held is not None and held.session is not None:
            held.session.close()
        self.store.delete(key)

    def close(self) -> None:
        """Close the sessions held here (their last saves stay in the store)."""
        with self._lock:
            held, self._held = self._held, {}
        for h in held.values():
            with h.lock:
                if h.session is not None:
                    h.session.close()
