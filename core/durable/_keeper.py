"""`Keeper`: conversations whose sessions live in a store, so any worker can take the next call.

A call for a key takes the key's lease and marks the call as running (`begin`), uses the
session this process already holds if nobody has moved the conversation on since (the
store's version says so; `current`), else restores it from the store (`fetch`). After the
cell, its state is stored and the mark cleared (`commit`) before the answer goes back: an
answer the model has read is never undone by a worker dying. The lease is then given back on
another thread. A worker that takes over from one that died mid-call finds the mark, and the
model is told which cell was lost. `checkout`/`checkin` do all of it for a plain session per
key.
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

__all__ = ["Call", "Keeper", "LOST_CELL", "Save", "UNREACHABLE", "UNRESTORABLE", "UNSAVED"]

log = logging.getLogger("tooliscode")

UNREACHABLE = ("The session store could not be reached ({error}); this is a new Python "
               "session: earlier variables are gone.")
UNRESTORABLE = ("The saved session could not be restored ({error}); this is a new Python "
                "session: earlier variables are gone.")
LOST_CELL = ("The last cell of this conversation did not complete: the worker running it "
             "stopped before its result was saved, so whatever it did is lost. {state} Run "
             "again what that cell did if it is still needed.")
LOST_FROM_SAVED = "This session continues from the state saved after the cell before it."
LOST_FROM_NOTHING = ("Nothing of this conversation was saved before it: this is a new Python "
                     "session, with none of the earlier variables.")
UNSAVED = ("This cell ran, but its state could not be saved ({error}): if the conversation "
           "moves to another worker, it continues from before this cell.")
Save = Literal["before_answer", "after_answer_lossy"]
"""When a call's state is stored: "before_answer" (the default) answers only once it is;
"after_answer_lossy" answers first and stores on another thread, a few milliseconds sooner,
and a worker killed in between loses a cell the model already read (the next worker says
so)."""


@dataclass
class Call:
    """One call's hold on its conversation (from `begin` to `commit` or `end`)."""

    key: str
    version: str | None
    """The store's version of the session when the call began."""
    unreachable: str | None = None
    """What to tell the model when the store could not be reached (on_store_error="fresh")."""
    lost: bool = False
    """An earlier call began and never committed: its worker died mid-call."""

    def lost_notice(self, restored: bool) -> str | None:
        """What to tell the model of the lost call, once it is known whether a saved state
        was found (`restored`)."""
        if not self.lost:
            return None
        return LOST_CELL.format(state=LOST_FROM_SAVED if restored else LOST_FROM_NOTHING)


@dataclass
class _Key:
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held from `begin` until the save after the call is stored."""
    version: str | None = None
    """The store's version of the session held here (None: none held, or unknown)."""
    renewing: threading.Event | None = None
    session: Session | None = None
    """For `checkout`/`checkin` only: the plain session kept for this key."""
    call: Call | None = None
    """For `checkout`/`checkin` only: the call between them."""


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
    save: Save = "before_answer"
    """When a call's state is stored (see `Save`)."""
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

    def begin(self, key: str) -> Call:
        """Take `key` for one call: its lease, the store's version of its session, and the
        mark that says a call runs (which finds one that never ended)."""
        entry = self._entry(key)
        entry.lock.acquire()
        try:
            self._lease(key, entry)
            lost = self.store.mark_running(key, self.owner) is not None
            return Call(key, self.store.version(key), lost=lost)
        except StoreUnavailable as exc:
            self._stop_renewing(entry)
            if self.on_store_error == "error":
                entry.lock.release()
                raise
            entry.version = None
            return Call(key, None, unreachable=UNREACHABLE.format(error=exc))
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

    def commit(self, call: Call, session: Session | None) -> str | None:
        """The cell is done: store `session` and clear the call's mark, then give the lease
        back on another thread. With `save="before_answer"` the state is stored when this
        returns (answer after it); a notice for the model if it could not be."""
        if self.save == "after_answer_lossy" or call.unreachable is not None:
            self.end(call.key, session)
            return None
        entry = self._entry(call.key)
        try:
            notice = self._store(call.key, entry, session)
        except BaseException:
            self._let_go(call.key, entry)
            raise
        threading.Thread(target=self._let_go, args=(call.key, entry), daemon=True,
                         name="tooliscode-release").start()
        return notice

    def pause(self, call: Call, name: str, record: bytes) -> None:
        """The cell paused: store `record` under `name` (the conversation's state stays the
        one before the cell) and end the call, the lease given back on another thread."""
        entry = self._entry(call.key)
        try:
            if call.unreachable is None:
                self.store.put(name, record)
                self.store.clear_running(call.key, self.owner)
        except BaseException:
            self._let_go(call.key, entry)
            raise
        threading.Thread(target=self._let_go, args=(call.key, entry), daemon=True,
                         name="tooliscode-release").start()

    def end(self, key: str, session: Session | None, *, wait: bool = False) -> None:
        """The call is over without `commit` (it failed, or saves come after answers): store
        `session` if there is one and give the lease back, on another thread (`wait=True`:
        here)."""
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
        if session.closed or session.runtime.exact:
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
        call = self.begin(key)
        entry = self._entry(key)
        entry.call = call
        notices: list[str] = []
        try:
            if entry.session is not None and (call.unreachable or self.current(key, call.version)):
                return entry.session, call.unreachable or call.lost_notice(restored=True)
            blob = None if call.unreachable else self.fetch(key, call.version)
            held, entry.session = entry.session, None
            if held is not None:  # another worker moved the conversation on
                if blob is not None and self.reload(held, blob):
                    entry.session = held
                    return held, call.lost_notice(restored=True)
                held.close()
            if blob is not None:
                try:
                    entry.session = restore(blob)
                except SnapshotError as exc:
                    notices.append(UNRESTORABLE.format(error=exc))
                    blob = None
            if entry.session is None:
                entry.session = make()
            notices += [n for n in (call.unreachable, call.lost_notice(blob is not None)) if n]
            return entry.session, " ".join(notices) or None
        except BaseException:
            entry.call = None
            self.end(key, None, wait=True)
            raise

    def checkin(self, key: str) -> str | None:
        """Give `key`'s session back: stored before this returns (see `commit`); a notice
        for the model if it could not be."""
        entry = self._entry(key)
        call, entry.call = entry.call, None
        if call is None:
            raise RuntimeError(f"checkin({key!r}) without checkout")
        return self.commit(call, entry.session)

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

    def _store(self, key: str, entry: _Key, session: Session | None) -> str | None:
        """Store `session` and clear this worker's running mark; a notice for the model when
        that failed (the mark then stays: the next worker knows the state is older)."""
        try:
            if session is not None and not session.closed:
                blob = session.snapshot(key=self.key)
                self.store.commit(key, blob, self.owner)
                entry.version = version_of(blob)
            else:
                self.store.clear_running(key, self.owner)
            return None
        except Exception as exc:  # noqa: BLE001 - the next call restores the last good save
            log.exception("tooliscode: saving conversation %r failed", key)
            entry.version = None
            return UNSAVED.format(error=exc)

    def _let_go(self, key: str, entry: _Key) -> None:
        self._stop_renewing(entry)
        try:
            self.store.release(key, self.owner)
        except StoreUnavailable:
            log.warning("tooliscode: could not release the lease of %r", key)
        finally:
            entry.lock.release()

    def _save(self, key: str, entry: _Key, session: Session | None) -> None:
        try:
            self._store(key, entry, session)
        finally:
            self._let_go(key, entry)
