"""Cells paused for decisions, as the code tool keeps them between the run that paused and the
run that continues.

In this process a paused cell simply stays parked in its session: a conversation's session is
kept anyway, and a run's sandbox is kept here, by the code tool call it paused in, instead of
being closed when its run ends. With a session store, the pause is also written down under
the conversation's key (`PauseRecord`): the calls the cell made and those it waits on, beside
the state from before the cell (the conversation's last save). Another process continues it
by running the cell again from that state, its logged calls answered from the record.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

from ..engine import CellLog
from ._sandbox import Sandbox

__all__ = ["GONE", "PausedRuns", "PauseRecord", "record_key"]

GONE = ("[error] There is no paused cell for this call to continue (it was continued already, "
        "it expired, or its process ended without a session store): nothing ran. Run the "
        "code again as a new cell if it is still needed.")
EXPIRED = ("[error] The paused cell of this call waited longer than its limit for its "
           "decisions and can no longer be continued: nothing ran. Run the code again as a new "
           "cell if it is still needed.")


def record_key(key: str, call_id: str) -> str:
    """Where the store keeps conversation `key`'s cell paused in code tool call `call_id`."""
    return f"{key}\x00paused\x00{call_id}"


@dataclass
class PauseRecord:
    """A paused cell as the store keeps it: its log, and the conversation's version it must
    continue from (a record that outlived its cell never runs against a later state)."""

    log: CellLog
    base: str | None

    def to_bytes(self) -> bytes:
        return json.dumps({"log": self.log.to_json(), "base": self.base}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> PauseRecord:
        parsed = json.loads(data)
        return cls(CellLog.from_json(parsed["log"]), parsed.get("base"))

    @property
    def expired(self) -> bool:
        return self.log.expires is not None and time.time() > self.log.expires


@dataclass
class PausedRuns:
    """Run sandboxes whose cell paused, by the code tool call it paused in, until a later run
    continues it or the pause expires: the sandbox is then closed, by a thread that runs only
    while some pause can expire."""

    _held: dict[str, tuple[Sandbox, float | None]] = field(default_factory=dict)
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _sweeping: bool = False

    def keep(self, call_id: str, sandbox: Sandbox, expire_s: float | None) -> None:
        with self._lock:
            self._held[call_id] = (sandbox, None if expire_s is None
                                   else time.monotonic() + expire_s)
            if expire_s is not None and not self._sweeping:
                self._sweeping = True
                threading.Thread(target=self._sweeper, name="tooliscode-pauses",
                                 daemon=True).start()
            self._lock.notify_all()
        self.sweep()

    def take(self, call_id: str) -> Sandbox | None:
        """The sandbox paused in `call_id`, no longer kept here (the run that continues it
        owns it now)."""
        self.sweep()
        with self._lock:
            held = self._held.pop(call_id, None)
        return held[0] if held is not None else None

    def peek(self, call_id: str) -> Sandbox | None:
        """The sandbox paused in `call_id`, still kept here."""
        with self._lock:
            held = self._held.get(call_id)
        return held[0] if held is not None else None

    def waits(self, call_id: str) -> bool:
        """A sandbox paused in `call_id` is kept here."""
        with self._lock:
            return call_id in self._held

    def holds(self, sandbox: Sandbox) -> bool:
        with self._lock:
            return any(s is sandbox for s, _ in self._held.values())

    def sweep(self) -> None:
        """Close the sandboxes whose pause expired."""
        now = time.monotonic()
        with self._lock:
            gone = [k for k, (_, until) in self._held.items() if until is not None and now > until]
            closed = [self._held.pop(k)[0] for k in gone]
        for sandbox in closed:
            sandbox.close()

    def _sweeper(self) -> None:
        """Sweep at each expiry; end when no held pause can expire."""
        while True:
            with self._lock:
                untils = [until for _, until in self._held.values() if until is not None]
                if not untils:
                    self._sweeping = False
                    return
                left = min(untils) - time.monotonic()
                if left >= 0:
                    self._lock.wait(left + 0.01)
                    continue
            self.sweep()

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
            self._lock.notify_all()
        for sandbox, _ in held:
            sandbox.close()
